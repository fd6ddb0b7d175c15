//! The SDK layer: DPU sets, allocation, programs, symbols and transfers as the UPMEM SDK
//! presents them.
//!
//! It checks what the program asks for (symbols, bounds, prepared buffers) and turns it into
//! requests on ranks ([`crate::exec::RankOp`]) for the backend that runs them
//! ([`crate::exec::Backend`]); it never knows which backend that is.

pub mod checkpoint;
pub mod rank;
pub mod set;
pub mod system;

//! Shared pieces of the OpenPIM fuzz targets (fuzz/README.md): the engine target's input
//! format, which the corpus tool also writes from real DPU programs, and the checks every
//! target applies to what it got back.

pub mod engine_case;

//! The virtual clock: the run's timeline, the program's clocks, and the report.
//!
//! The SDK layer ([`crate::sdk`]) and the execution layer ([`crate::exec`]) report events
//! here as plain values — rank slots, durations, byte counts, launch records — and the
//! clock calls neither of them.
//!
//! - [`timeline`]: host and rank timelines, what each operation costs in virtual time;
//! - [`host_clock`]: the clocks the host program reads (`clock_gettime` and friends);
//! - [`inter_dpu`]: exchanges between DPUs (inter-DPU time: regions, collectives);
//! - [`stats`]: launch statistics;
//! - [`report`]: the run report and trace built from the timeline.

pub(crate) mod cpu;
pub mod engine_use;
pub mod exchanges;
pub mod host_clock;
pub mod inter_dpu;
pub mod report;
pub mod stats;
pub mod timeline;
pub(crate) mod xfer_log;

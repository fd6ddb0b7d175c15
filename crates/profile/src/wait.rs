//! Wait frames: what a cycle with no issue, or a tasklet not issuing, is charged to.
//!
//! The rule (docs/profiling.md): a DPU cycle in which no tasklet issues is charged to
//! - `[wait: dma]` when a running tasklet waits for its MRAM transfer (its next issue is
//!   later than the revolver alone allows);
//! - else `[wait: revolver]` when a running tasklet waits for its next turn (the pipeline's
//!   revolver: fewer ready tasklets than the revolver has stages);
//! - else `[wait: mutex]` when the only running tasklets spin on a held lock (their last slot
//!   was a failed acquire);
//! - else the synchronisation the sleeping tasklets sleep in, the first of `barrier`,
//!   `semaphore`, `handshake`, `mutex` (a virtual mutex), `sleep` (a bare `stop`) that one of
//!   them sleeps in — found from the SDK function on the sleeping tasklet's stack;
//! - else (every tasklet exited, the run's last cycles) `[wait: end]`.

use openpim_debuginfo::Frame;

/// A wait frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Wait {
    Dma,
    Revolver,
    Mutex,
    Barrier,
    Semaphore,
    Handshake,
    Sleep,
    End,
}

impl Wait {
    pub const ALL: [Wait; 8] = [
        Wait::Dma,
        Wait::Revolver,
        Wait::Mutex,
        Wait::Barrier,
        Wait::Semaphore,
        Wait::Handshake,
        Wait::Sleep,
        Wait::End,
    ];

    /// The frame's name, as it appears in tables and stacks.
    pub fn frame(self) -> &'static str {
        match self {
            Wait::Dma => "[wait: dma]",
            Wait::Revolver => "[wait: revolver]",
            Wait::Mutex => "[wait: mutex]",
            Wait::Barrier => "[wait: barrier]",
            Wait::Semaphore => "[wait: semaphore]",
            Wait::Handshake => "[wait: handshake]",
            Wait::Sleep => "[wait: sleep]",
            Wait::End => "[wait: end]",
        }
    }

    /// Short key (JSON).
    pub fn key(self) -> &'static str {
        match self {
            Wait::Dma => "dma",
            Wait::Revolver => "revolver",
            Wait::Mutex => "mutex",
            Wait::Barrier => "barrier",
            Wait::Semaphore => "semaphore",
            Wait::Handshake => "handshake",
            Wait::Sleep => "sleep",
            Wait::End => "end",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// What a tasklet sleeping with `frames` (its stack, innermost first) waits for: the
    /// SDK synchronisation function it sleeps in, else a bare sleep.
    pub(crate) fn of_sleep<'f>(frames: impl IntoIterator<Item = &'f Frame>) -> Wait {
        for f in frames {
            let kind = match f.function.as_str() {
                "barrier_wait" => Wait::Barrier,
                "sem_take" => Wait::Semaphore,
                "handshake_wait_for" | "handshake_notify" => Wait::Handshake,
                "vmutex_lock" | "mutex_lock" => Wait::Mutex,
                _ => continue,
            };
            return kind;
        }
        Wait::Sleep
    }
}

/// Order in which sleeping tasklets' waits name an idle cycle.
pub(crate) const SLEEP_ORDER: [Wait; 5] = [
    Wait::Barrier,
    Wait::Semaphore,
    Wait::Handshake,
    Wait::Mutex,
    Wait::Sleep,
];

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(name: &str) -> Frame {
        Frame {
            function: name.into(),
            file: None,
            line: None,
            inlined: false,
        }
    }

    #[test]
    fn sleep_kind_from_the_stack() {
        let stack = [frame("__dpu_sleep"), frame("barrier_wait"), frame("main")];
        assert_eq!(Wait::of_sleep(&stack), Wait::Barrier);
        assert_eq!(Wait::of_sleep(&[frame("sem_take")]), Wait::Semaphore);
        assert_eq!(Wait::of_sleep(&[frame("main")]), Wait::Sleep);
    }

    #[test]
    fn frames_are_bracketed() {
        for w in Wait::ALL {
            assert!(w.frame().starts_with("[wait: ") && w.frame().ends_with(']'));
            assert_eq!(Wait::ALL[w.index()], w);
        }
    }
}

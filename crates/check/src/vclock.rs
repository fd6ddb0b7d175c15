//! Vector clocks over a DPU's tasklets (at most 24), as a happens-before detector keeps
//! them: one logical clock per tasklet, joined along synchronisation edges.

/// The most tasklets a DPU runs.
pub const MAX_TASKLETS: usize = 24;

/// A vector clock: component `u` is the last epoch of tasklet `u` known to happen before.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct VClock(pub [u32; MAX_TASKLETS]);

impl VClock {
    /// Component-wise maximum: everything `other` knows, this now knows too.
    pub fn join(&mut self, other: &VClock) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a = (*a).max(*b);
        }
    }

    /// The epoch `clock` of tasklet `t` happens before this clock's holder.
    #[inline]
    pub fn covers(&self, t: u8, clock: u32) -> bool {
        clock <= self.0[t as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_is_componentwise_max() {
        let mut a = VClock::default();
        a.0[0] = 3;
        a.0[1] = 1;
        let mut b = VClock::default();
        b.0[1] = 5;
        a.join(&b);
        assert_eq!(&a.0[..3], &[3, 5, 0]);
        assert!(a.covers(1, 5));
        assert!(!a.covers(1, 6));
    }
}

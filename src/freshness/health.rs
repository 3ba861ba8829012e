//! Replica health with hysteresis: pure state, no I/O.
//!
//! Two questions with different answers:
//! - *Is the replica current?* Only if its last probe succeeded. A single
//!   failed or timed-out probe means sluice no longer knows what the replica
//!   holds or whether it answers at all, so it leaves rotation at once: no
//!   new read goes there.
//! - *Is the replica up?* Hysteresis against flapping: it goes down after
//!   `fall` failed probes in a row and comes back up after `rise` good probes
//!   in a row. Going down is what ends reads under way on it (moved to the
//!   master if nothing reached the client yet, else an error: one slow probe
//!   on a busy replica must not do that), and a replica that was down must
//!   prove itself `rise` times before it serves reads again.
//!
//! In rotation = up and current. Freshness (counters caught up) is checked on
//! top of that, per read (`state::Counters::covers`).

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Health {
    /// See the module docs; starts down (a new replica needs `rise` probes).
    pub up: bool,
    /// The last probe succeeded.
    pub current: bool,
    ok_streak: u32,
    fail_streak: u32,
}

impl Health {
    /// May serve new reads (freshness permitting).
    pub fn in_rotation(&self) -> bool {
        self.up && self.current
    }

    /// Account for one probe. Returns true when `up` or `current` changed.
    pub fn record(&mut self, ok: bool, rise: u32, fall: u32) -> bool {
        let before = *self;
        self.current = ok;
        if ok {
            self.fail_streak = 0;
            self.ok_streak = self.ok_streak.saturating_add(1);
            if self.ok_streak >= rise {
                self.up = true;
            }
        } else {
            self.ok_streak = 0;
            self.fail_streak = self.fail_streak.saturating_add(1);
            if self.fail_streak >= fall {
                self.up = false;
            }
        }
        (before.up, before.current) != (self.up, self.current)
    }
}

/// A replica's [`Health`] as the routing path reads it: two bits in one
/// atomic, set after every probe. Reads ask per statement (in rotation? still
/// up?), where the watch the probes write takes its lock for each look.
#[derive(Debug, Default)]
pub struct HealthFlags(std::sync::atomic::AtomicU8);

const UP: u8 = 1;
const CURRENT: u8 = 2;
/// An operator drains the replica (`DRAIN BACKEND`): out of rotation
/// whatever the probes say; kept across probes.
const DRAINED: u8 = 4;

impl HealthFlags {
    pub fn store(&self, h: &Health) {
        let bits = if h.up { UP } else { 0 } | if h.current { CURRENT } else { 0 };
        let _ = self.0.fetch_update(
            std::sync::atomic::Ordering::Release,
            std::sync::atomic::Ordering::Acquire,
            |old| Some(bits | (old & DRAINED)),
        );
    }

    /// `DRAIN BACKEND` / `ENABLE BACKEND` of this replica.
    pub fn set_drained(&self, drained: bool) {
        use std::sync::atomic::Ordering::AcqRel;
        if drained {
            self.0.fetch_or(DRAINED, AcqRel);
        } else {
            self.0.fetch_and(!DRAINED, AcqRel);
        }
    }

    fn bits(&self) -> u8 {
        self.0.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn up(&self) -> bool {
        self.bits() & UP != 0
    }

    pub fn in_rotation(&self) -> bool {
        self.bits() == UP | CURRENT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(h: &mut Health, probes: &str) -> String {
        probes
            .chars()
            .map(|c| {
                h.record(c == '+', 2, 3);
                match (h.up, h.current) {
                    (true, true) => 'R',  // in rotation
                    (true, false) => 'u', // up, not current
                    (false, _) => 'd',
                }
            })
            .collect()
    }

    #[test]
    fn starts_down_and_needs_rise_successes() {
        let mut h = Health::default();
        assert!(!h.in_rotation());
        assert_eq!(run(&mut h, "++"), "dR");
    }

    #[test]
    fn one_failure_leaves_rotation_but_not_up() {
        let mut h = Health::default();
        run(&mut h, "++");
        // A single failure: out of rotation, still up; one success restores it.
        assert_eq!(run(&mut h, "-+"), "uR");
        // Alternating failures never reach `fall`: it stays up (no flapping
        // of the down state), and is only used after good probes.
        assert_eq!(run(&mut h, "-+-+"), "uRuR");
    }

    #[test]
    fn fall_failures_mark_down_then_rise_successes_bring_it_back() {
        let mut h = Health::default();
        run(&mut h, "++");
        assert_eq!(run(&mut h, "---"), "uud");
        // Once down, a single good probe is not enough.
        assert_eq!(run(&mut h, "+-+"), "ddd");
        assert_eq!(run(&mut h, "+"), "R");
    }

    #[test]
    fn record_reports_changes() {
        let mut h = Health::default();
        assert!(h.record(true, 2, 3), "current, still down");
        assert!(h.record(true, 2, 3), "up");
        assert!(!h.record(true, 2, 3));
        assert!(h.record(false, 2, 3), "no longer current");
        assert!(!h.record(false, 2, 3));
        assert!(h.record(false, 2, 3), "down");
    }

    #[test]
    fn a_drained_replica_stays_out_of_rotation_across_probes() {
        let (f, mut h) = (HealthFlags::default(), Health::default());
        h.record(true, 1, 1);
        f.store(&h);
        assert!(f.in_rotation());
        f.set_drained(true);
        assert!(
            !f.in_rotation() && f.up(),
            "out of rotation, still up (reads under way go on)"
        );
        f.store(&h);
        assert!(!f.in_rotation(), "a probe keeps the drain");
        f.set_drained(false);
        assert!(f.in_rotation());
    }
}

//! Back-off after failed accepts, for every accept loop (clients, admin).

/// Growing pauses after failed accepts (EMFILE, ENFILE, ENOBUFS...): the
/// error repeats at once while it lasts, and retrying without a pause spins
/// a core. 5 ms doubling to 1 s; reset by the next accepted connection.
#[derive(Debug, Default)]
pub struct AcceptBackoff {
    failures: u32,
}

impl AcceptBackoff {
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// The pause for the current run of failures.
    pub fn delay(&self) -> std::time::Duration {
        let ms = 5u64.saturating_mul(1 << self.failures.min(8));
        std::time::Duration::from_millis(ms.min(1000))
    }

    pub async fn wait(&mut self) {
        let d = self.delay();
        self.failures = self.failures.saturating_add(1);
        tokio::time::sleep(d).await;
    }
}

#[cfg(test)]
mod tests {
    use super::AcceptBackoff;
    use std::time::Duration;

    #[test]
    fn accept_backoff_grows_and_is_capped() {
        let mut b = AcceptBackoff::default();
        assert_eq!(b.delay(), Duration::from_millis(5));
        for _ in 0..3 {
            b.failures += 1;
        }
        assert_eq!(b.delay(), Duration::from_millis(40));
        b.failures = 1000;
        assert_eq!(b.delay(), Duration::from_secs(1));
        b.reset();
        assert_eq!(b.delay(), Duration::from_millis(5));
    }
}

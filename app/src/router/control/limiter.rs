//! A token bucket for ICMP errors (like the kernel's `icmp_ratelimit`).

use std::time::Instant;

/// Up to `burst` messages at once, refilled at `per_sec`.
#[derive(Debug)]
pub struct TokenBucket {
    tokens: f64,
    burst: f64,
    per_sec: f64,
    last: Instant,
}

impl TokenBucket {
    pub fn new(per_sec: f64, burst: f64, now: Instant) -> Self {
        TokenBucket {
            tokens: burst,
            burst,
            per_sec,
            last: now,
        }
    }

    /// Take a token if there is one.
    pub fn take(&mut self, now: Instant) -> bool {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + dt * self.per_sec).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn bursts_then_refills_at_the_rate() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(10.0, 3.0, t0);
        assert!((0..3).all(|_| b.take(t0)));
        assert!(!b.take(t0));
        assert!(b.take(t0 + Duration::from_millis(100)));
        assert!(!b.take(t0 + Duration::from_millis(100)));
        let later = t0 + Duration::from_secs(10);
        assert_eq!((0..10).filter(|_| b.take(later)).count(), 3);
    }
}

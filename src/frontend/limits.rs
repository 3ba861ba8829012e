//! Connection limits: sessions in total (`limits.max_client_connections`)
//! and per user (`users[].max_connections`). Each admitted session holds a
//! slot, a guard that gives it back when dropped, so a session that ends in
//! any way (error, early return, panic) frees its place.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::User;
use crate::error;
use crate::protocol::packets::ErrPacket;

/// The places for client sessions.
pub struct ClientSlots {
    slots: Arc<Semaphore>,
    max: u32,
}

/// One admitted client session; dropping it frees the place.
#[derive(Debug)]
pub struct ClientSlot(#[allow(dead_code)] OwnedSemaphorePermit);

impl ClientSlots {
    pub fn new(max: usize) -> ClientSlots {
        // The configuration bounds `max` far below u32::MAX.
        let max = u32::try_from(max).unwrap_or(u32::MAX);
        ClientSlots {
            slots: Arc::new(Semaphore::new(max as usize)),
            max,
        }
    }

    /// A place for one more session, or `None` when all are taken.
    pub fn try_acquire(&self) -> Option<ClientSlot> {
        self.slots.clone().try_acquire_owned().ok().map(ClientSlot)
    }

    /// Sessions holding a place now.
    pub fn in_use(&self) -> usize {
        self.max as usize - self.slots.available_permits()
    }

    /// Waits until every session has ended, or `timeout` passed; true when
    /// all ended.
    pub async fn wait_all_free(&self, timeout: Duration) -> bool {
        tokio::time::timeout(timeout, self.slots.acquire_many(self.max))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}

/// Per-user session counts, for users with `max_connections`.
#[derive(Default)]
pub struct UserLimits {
    users: HashMap<String, Arc<UserCount>>,
}

struct UserCount {
    max: u32,
    current: AtomicU32,
}

/// One session counted against its user's limit; dropping it releases it.
pub struct UserSlot(Option<Arc<UserCount>>);

impl UserSlot {
    /// A slot that counts nothing (frees the previous one when assigned over it).
    pub fn none() -> UserSlot {
        UserSlot(None)
    }
}

impl Drop for UserSlot {
    fn drop(&mut self) {
        if let Some(count) = self.0.take() {
            count.current.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl UserLimits {
    pub fn new(users: &[User]) -> UserLimits {
        let users = users
            .iter()
            .filter(|u| u.max_connections > 0)
            .map(|u| {
                let count = UserCount {
                    max: u.max_connections,
                    current: AtomicU32::new(0),
                };
                (u.name.clone(), Arc::new(count))
            })
            .collect();
        UserLimits { users }
    }

    /// Counts one more session of `user`; the error is MariaDB's 1226 when
    /// the user already has its maximum.
    pub fn acquire(&self, user: &str) -> Result<UserSlot, ErrPacket> {
        let Some(count) = self.users.get(user) else {
            return Ok(UserSlot(None));
        };
        let admitted = count
            .current
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < count.max).then_some(n + 1)
            });
        match admitted {
            Ok(_) => Ok(UserSlot(Some(count.clone()))),
            Err(_) => Err(error::user_limit_reached(user, count.max)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Credential;

    fn user(name: &str, max: u32) -> User {
        User {
            name: name.to_owned(),
            credential: Credential::Password(String::new()),
            max_connections: max,
        }
    }

    #[test]
    fn user_slots_are_counted_and_released() {
        let limits = UserLimits::new(&[user("a", 2), user("free", 0)]);
        let one = limits.acquire("a").expect("first");
        let two = limits.acquire("a").expect("second");
        let refused = limits.acquire("a").err().expect("third is refused");
        assert_eq!(refused.code, 1226);
        assert_eq!(
            refused.message,
            "User 'a' has exceeded the 'max_user_connections' resource (current value: 2)"
        );
        drop(one);
        let three = limits.acquire("a").expect("a place was freed");
        let unlimited: Vec<_> = (0..100)
            .map(|_| limits.acquire("free").expect("no limit"))
            .collect();
        drop((two, three, unlimited));
    }

    #[tokio::test]
    async fn client_slots_are_limited_and_drained() {
        let slots = ClientSlots::new(2);
        let a = slots.try_acquire().expect("a");
        let b = slots.try_acquire().expect("b");
        assert!(slots.try_acquire().is_none());
        assert_eq!(slots.in_use(), 2);
        drop(a);
        assert_eq!(slots.in_use(), 1);
        assert!(!slots.wait_all_free(Duration::from_millis(20)).await);
        drop(b);
        assert!(slots.wait_all_free(Duration::from_millis(20)).await);
    }
}

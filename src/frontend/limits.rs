//! Connection limits: sessions in total (`limits.max_client_connections`)
//! and per user (`users[].max_connections`), and connections still in their
//! handshake (`limits.max_unauthenticated`, in total and per address). Each
//! admitted connection holds a slot, a guard that gives it back when
//! dropped, so a connection that ends in any way (error, early return,
//! panic) frees its place.
//!
//! The two budgets are separate on purpose: a connection takes a place
//! among the sessions only once it is authenticated, so sockets that never
//! finish their handshake cannot lock real logins out.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
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

    /// True when every place is taken (a new client would be refused).
    pub fn full(&self) -> bool {
        self.slots.available_permits() == 0
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

/// Per-user session counts, for users with `max_connections`, and per
/// server account with `MAX_USER_CONNECTIONS` (client sessions, as the
/// server counts its connections; the pooled backend connections are not
/// what the limit is about).
#[derive(Default)]
pub struct UserLimits {
    users: HashMap<String, Arc<UserCount>>,
    accounts: Mutex<HashMap<String, Arc<UserCount>>>,
}

struct UserCount {
    max: AtomicU32,
    current: AtomicU32,
}

/// A server account's `MAX_USER_CONNECTIONS` (`key`: `'user'@'host'`).
#[derive(Debug, Clone)]
pub struct AccountLimit {
    pub key: String,
    pub max: u32,
}

/// One authenticated session: counted against its user's limit, and
/// holding its place among all sessions; dropping it releases both.
pub struct UserSlot {
    user: Option<Arc<UserCount>>,
    client: Option<ClientSlot>,
}

impl UserSlot {
    /// A slot that counts nothing (frees the previous one when assigned over it).
    pub fn none() -> UserSlot {
        UserSlot {
            user: None,
            client: None,
        }
    }

    /// This slot, also holding the session's place among all sessions.
    pub fn with_client(mut self, client: ClientSlot) -> UserSlot {
        self.client = Some(client);
        self
    }

    /// COM_CHANGE_USER: count the session against `user` instead, keeping
    /// its place among all sessions. On error (1226) nothing is counted.
    pub fn switch_user(
        &mut self,
        limits: &UserLimits,
        user: &str,
        account: Option<&AccountLimit>,
    ) -> Result<(), ErrPacket> {
        let client = self.client.take();
        // Released first: changing to the same user must not count twice.
        *self = UserSlot::none();
        let mut next = limits.acquire_for(user, account)?;
        next.client = client;
        *self = next;
        Ok(())
    }
}

impl Drop for UserSlot {
    fn drop(&mut self) {
        if let Some(count) = self.user.take() {
            count.current.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Connections still in their handshake: a total budget and a cap per
/// client address (`limits.max_unauthenticated*`).
pub struct Handshakes {
    total: Arc<Semaphore>,
    max: u32,
    per_address: Arc<Mutex<HashMap<IpAddr, usize>>>,
    max_per_address: usize,
}

/// Why a new connection was refused before its greeting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandshakeRefusal {
    /// `limits.max_unauthenticated` connections are in their handshake.
    Total,
    /// `limits.max_unauthenticated_per_address` of them from this address.
    Address,
}

/// One connection in its handshake; dropping it frees its place.
pub struct HandshakeSlot {
    _permit: OwnedSemaphorePermit,
    addr: IpAddr,
    per_address: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl Drop for HandshakeSlot {
    fn drop(&mut self) {
        let mut map = self.per_address.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = map.get_mut(&self.addr) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.addr);
            }
        }
    }
}

impl Handshakes {
    pub fn new(max: usize, max_per_address: usize) -> Handshakes {
        Handshakes {
            total: Arc::new(Semaphore::new(max)),
            // The configuration bounds `max` far below u32::MAX.
            max: u32::try_from(max).unwrap_or(u32::MAX),
            per_address: Arc::new(Mutex::new(HashMap::new())),
            max_per_address,
        }
    }

    /// Waits until no connection is in its handshake (each ends within
    /// `limits.handshake_timeout`), or `timeout` passed; true when none is.
    pub async fn wait_all_done(&self, timeout: Duration) -> bool {
        tokio::time::timeout(timeout, self.total.acquire_many(self.max))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// A place for one more connection from `addr` in its handshake. Taken
    /// once per connection at accept (never per statement).
    pub fn try_acquire(&self, addr: IpAddr) -> Result<HandshakeSlot, HandshakeRefusal> {
        let permit = self
            .total
            .clone()
            .try_acquire_owned()
            .map_err(|_| HandshakeRefusal::Total)?;
        let mut map = self.per_address.lock().unwrap_or_else(|e| e.into_inner());
        let n = map.entry(addr).or_insert(0);
        if *n >= self.max_per_address {
            return Err(HandshakeRefusal::Address);
        }
        *n += 1;
        drop(map);
        Ok(HandshakeSlot {
            _permit: permit,
            addr,
            per_address: self.per_address.clone(),
        })
    }
}

impl UserLimits {
    pub fn new(users: &[User]) -> UserLimits {
        let users = users
            .iter()
            .filter(|u| u.max_connections > 0)
            .map(|u| {
                let count = UserCount {
                    max: AtomicU32::new(u.max_connections),
                    current: AtomicU32::new(0),
                };
                (u.name.clone(), Arc::new(count))
            })
            .collect();
        UserLimits {
            users,
            accounts: Mutex::default(),
        }
    }

    /// Counts one more session of `user`, logged in as the server `account`
    /// when given (its `MAX_USER_CONNECTIONS`, as of the catalog now), else
    /// as a configured user; the error is MariaDB's 1226 when it already has
    /// its maximum.
    pub fn acquire_for(&self, user: &str, account: Option<&AccountLimit>) -> Result<UserSlot, ErrPacket> {
        let count = match account {
            Some(a) => {
                let Ok(mut map) = self.accounts.lock() else {
                    return Ok(UserSlot::none());
                };
                // Counted while unlimited too: a limit set later counts the
                // sessions already there, as the server does.
                map.retain(|_, c| Arc::strong_count(c) > 1 || c.current.load(Ordering::Acquire) > 0);
                let c = map
                    .entry(a.key.clone())
                    .or_insert_with(|| {
                        Arc::new(UserCount {
                            max: AtomicU32::new(0),
                            current: AtomicU32::new(0),
                        })
                    })
                    .clone();
                c.max.store(a.max, Ordering::Release);
                c
            }
            None => match self.users.get(user) {
                Some(c) => c.clone(),
                None => return Ok(UserSlot::none()),
            },
        };
        let max = count.max.load(Ordering::Acquire);
        let admitted = count
            .current
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (max == 0 || n < max).then_some(n + 1)
            });
        match admitted {
            Ok(_) => Ok(UserSlot {
                user: Some(count),
                client: None,
            }),
            Err(_) => Err(error::user_limit_reached(user, max)),
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
            require_tls: false,
            backend: None,
        }
    }

    #[test]
    fn changing_user_keeps_the_session_place() {
        let limits = UserLimits::new(&[user("a", 1), user("b", 1)]);
        let clients = ClientSlots::new(1);
        let mut slot = limits
            .acquire_for("a", None)
            .expect("a")
            .with_client(clients.try_acquire().expect("place"));
        slot.switch_user(&limits, "a", None).expect("the same user again");
        slot.switch_user(&limits, "b", None).expect("b");
        assert!(limits.acquire_for("a", None).is_ok(), "a was released");
        assert_eq!(limits.acquire_for("b", None).err().map(|e| e.code), Some(1226));
        assert!(clients.full(), "the place is kept");
        drop(slot);
        assert!(!clients.full());
    }

    #[test]
    fn handshakes_are_capped_in_total_and_per_address() {
        let h = Handshakes::new(3, 2);
        let a: IpAddr = [127, 0, 0, 1].into();
        let b: IpAddr = [127, 0, 0, 2].into();
        let a1 = h.try_acquire(a).expect("a1");
        let a2 = h.try_acquire(a).expect("a2");
        assert_eq!(h.try_acquire(a).err(), Some(HandshakeRefusal::Address));
        let b1 = h.try_acquire(b).expect("b1");
        assert_eq!(h.try_acquire(b).err(), Some(HandshakeRefusal::Total));
        drop(a1);
        let a3 = h.try_acquire(a).expect("a place from a was freed");
        drop((a2, a3, b1));
        assert!(
            h.per_address.lock().expect("lock").is_empty(),
            "no entry left behind"
        );
    }

    #[test]
    fn user_slots_are_counted_and_released() {
        let limits = UserLimits::new(&[user("a", 2), user("free", 0)]);
        let one = limits.acquire_for("a", None).expect("first");
        let two = limits.acquire_for("a", None).expect("second");
        let refused = limits.acquire_for("a", None).err().expect("third is refused");
        assert_eq!(refused.code, 1226);
        assert_eq!(
            refused.message,
            "User 'a' has exceeded the 'max_user_connections' resource (current value: 2)"
        );
        drop(one);
        let three = limits.acquire_for("a", None).expect("a place was freed");
        let unlimited: Vec<_> = (0..100)
            .map(|_| limits.acquire_for("free", None).expect("no limit"))
            .collect();
        drop((two, three, unlimited));
        // Server accounts: counted per account, under its current limit.
        let acc = |max| AccountLimit {
            key: "'u'@'%'".into(),
            max,
        };
        let a1 = limits.acquire_for("u", Some(&acc(2))).expect("first");
        let a2 = limits.acquire_for("u", Some(&acc(2))).expect("second");
        let e = limits.acquire_for("u", Some(&acc(2))).err().expect("third");
        assert_eq!(
            e.message,
            "User 'u' has exceeded the 'max_user_connections' resource (current value: 2)"
        );
        let a3 = limits
            .acquire_for("u", Some(&acc(3)))
            .expect("the limit was raised");
        drop((a1, a2, a3));
        let again: Vec<_> = (0..3)
            .map(|_| limits.acquire_for("u", Some(&acc(0))).expect("no limit"))
            .collect();
        drop(again);
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

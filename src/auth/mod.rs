//! The server's own accounts: reading them (`catalog`), matching a client
//! to one the way the server does (`host`), and mysql_native_password
//! logins derived from the client's proof, never from a stored cleartext
//! (`native`). Pure functions except the catalog's refresher.

pub mod catalog;
pub mod host;
pub mod native;
pub mod rights;

pub use catalog::{Account, Catalog, Method, Snapshot};

//! The `sluice` command line. Only argument handling lives here; the proxy
//! itself is `sluice::app::run`.

use clap::{Parser, Subcommand};
use sluice::config::{self, Config};
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const LONG_ABOUT: &str = "\
sluice is a MySQL proxy. Clients connect to it as to one MySQL server; it sends \
writes to the master and reads to a replica only when that replica already holds \
every write the read must see, and it merges results across shards exactly as \
the server would order and aggregate them.

Example:
  sluice hash-password 's3cret'          # hash to put in password_hash
  sluice check-config config/sluice.yaml
  sluice serve --config config/sluice.yaml
  mysql -h 127.0.0.1 -P 6033 -u app -p";

#[derive(Parser)]
#[command(
    name = "sluice",
    version,
    about = "A MySQL proxy: read/write splitting without stale reads, exact cross-shard merging",
    long_about = LONG_ABOUT,
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// One variant per subcommand, each handled by one function in `main`.
#[derive(Subcommand)]
enum Command {
    /// Run the proxy
    Serve {
        /// Configuration file
        #[arg(short, long, value_name = "FILE", default_value = "config/sluice.yaml")]
        config: PathBuf,
    },
    /// Validate a configuration file and exit (0 = valid)
    CheckConfig {
        /// Configuration file
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Print the mysql_native_password hash of a password, for `password_hash`
    #[command(
        long_about = "Print the mysql_native_password hash (*HEX, as MySQL's PASSWORD() shows it) \
                      of a password, to put in a user's `password_hash` instead of a cleartext \
                      `password`. Without PASSWORD the password is read from stdin (one \
                      trailing newline removed), which keeps it out of shell history and `ps`."
    )]
    HashPassword {
        /// The password (read from stdin when omitted)
        password: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve { config } => serve(&config),
        Command::CheckConfig { file } => check_config(&file),
        Command::HashPassword { password } => hash_password(password),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Tool(message)) => {
            eprintln!("sluice: {message}");
            ExitCode::FAILURE
        }
        Err(Failure::Located(message)) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

/// How a failed command reports itself on stderr.
enum Failure {
    /// Printed as `sluice: message`.
    Tool(String),
    /// Already starts with `FILE:LINE:COL:`; printed alone so that editors
    /// and `grep -n`-style tooling can jump to the line.
    Located(String),
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure::Tool(message)
    }
}

fn serve(path: &Path) -> Result<(), Failure> {
    let config = Config::load(path).map_err(|e| e.to_string())?;
    sluice::logging::init(config.log.format, &config.log.level)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime
        .block_on(sluice::app::run(config))
        .map_err(|e| Failure::Tool(e.to_string()))
}

fn check_config(path: &Path) -> Result<(), Failure> {
    Config::load(path).map_err(|e| Failure::Located(e.to_string()))?;
    println!("{}: OK", path.display());
    Ok(())
}

fn hash_password(password: Option<String>) -> Result<(), Failure> {
    let password = match password {
        Some(password) => password,
        None => read_password_from_stdin()?,
    };
    let hash = config::native_password_hash(password.as_bytes());
    println!("{}", config::format_native_hash(&hash));
    Ok(())
}

/// Reads the password from stdin: one line at a terminal, everything from a
/// pipe. One trailing newline (what `echo` or Enter adds) is dropped; other
/// whitespace may be part of the password.
fn read_password_from_stdin() -> Result<String, String> {
    let stdin = std::io::stdin();
    let mut text = String::new();
    let read = if stdin.is_terminal() {
        eprint!("Password: ");
        stdin.read_line(&mut text)
    } else {
        stdin.lock().read_to_string(&mut text)
    };
    read.map_err(|e| format!("cannot read the password from stdin: {e}"))?;
    let password = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(&text);
    Ok(password.to_owned())
}

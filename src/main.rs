//! The `sluice` command line. Only argument handling lives here; the proxy
//! itself is `sluice::app::run`.

use clap::{Args, Parser, Subcommand};
use sluice::config::{self, Config, Freshness};
use sluice::freshness::triggers::{self, TriggerError};
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

const LONG_ABOUT: &str = "\
sluice is a MySQL proxy. Clients connect to it as to one MySQL server; it sends \
writes to the master and reads to a replica only when that replica already holds \
every write the read must see, and it merges results across shards exactly as \
the server would order and aggregate them.

Example:
  sluice hash-password 's3cret'          # hash to put in password_hash
  sluice check-config config/sluice.yaml
  sluice triggers install --schema shop  # track writes to shop's tables
  sluice serve --config config/sluice.yaml
  mysql -h 127.0.0.1 -P 6033 -u app -p";

const TRIGGERS_ABOUT: &str = "\
Manage the triggers that let sluice tell whether a replica is fresh.

Every base table of the schema gets three triggers, sluice_ai_<table>, \
sluice_au_<table> and sluice_ad_<table> (AFTER INSERT, UPDATE, DELETE). Each bumps \
a row of its event's counter table (`<freshness.schema>`.`counters`, `counters_update`, \
`counters_delete`) on the master; replication \
carries the rows to the replicas, and sluice compares them. Triggers that are not \
sluice's are never touched. Reads of a table without sluice's triggers go to the \
master.

The commands connect to the master of the group (--group, default the first group \
of the configuration) with that master's user and password from the configuration; \
the account needs CREATE, TRIGGER and SELECT on the schema and CREATE, INSERT, \
UPDATE and DELETE on the counter schema (and SUPER, or \
log_bin_trust_function_creators=1, when the binary log is on). The counter schema \
and the number of slots come from the `freshness` section.

Examples:
  sluice triggers install --schema shop       # idempotent: run it again after CREATE TABLE
  sluice triggers status --schema shop        # which tables are tracked
  sluice triggers sql --schema shop --tables orders,customers > triggers.sql
  sluice triggers uninstall --schema shop";

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
    /// Install, inspect or remove the freshness triggers of a schema
    #[command(long_about = TRIGGERS_ABOUT)]
    Triggers {
        #[command(subcommand)]
        action: TriggersAction,
    },
}

#[derive(Subcommand)]
enum TriggersAction {
    /// Create the counter table and the missing triggers of every base table (idempotent)
    #[command(
        long_about = "Create the counter table, its rows, and sluice's three triggers on every \
                            base table of the schema that lacks them. Sluice triggers with another \
                            slot count or counter schema are replaced, stale ones (renamed tables) \
                            dropped; other triggers are never touched. Running it again changes \
                            nothing; run it after creating tables. Exits 1 if a statement failed \
                            (e.g. a lock wait timeout behind a long transaction)."
    )]
    Install(TriggersTarget),
    /// Drop sluice's triggers of the schema and its counter rows (other triggers are kept)
    Uninstall(TriggersTarget),
    /// Show, per base table, sluice's triggers, other triggers and whether reads may use replicas
    #[command(
        long_about = "Show, per base table of the schema, which of sluice's three triggers \
                            exist, the other triggers on it, whether its counter rows exist, and \
                            whether its reads may go to a replica; lists the tables without sluice \
                            triggers (e.g. created after the install). Changes nothing; exits 0."
    )]
    Status(TriggersTarget),
    /// Print the install script (SQL for the mariadb/mysql client) instead of running it
    #[command(
        long_about = "Print an SQL script that creates the counter table, its rows and the \
                            triggers; run it with `mariadb ... < file.sql` (no DELIMITER needed). \
                            With --tables no server is contacted (and a missing default \
                            configuration file means the default counter schema and slots); \
                            without it, the base tables are listed on the group's master."
    )]
    Sql {
        #[command(flatten)]
        target: TriggersTarget,
        /// Comma-separated table names: generate for these without connecting to any server
        #[arg(long, value_name = "T1,T2", value_delimiter = ',')]
        tables: Option<Vec<String>>,
    },
}

#[derive(Args)]
struct TriggersTarget {
    /// The schema (database) whose tables are tracked
    #[arg(long, value_name = "DB")]
    schema: String,
    /// Configuration file (backend credentials, `freshness` section) [default: config/sluice.yaml]
    #[arg(short, long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Backend group whose master to use [default: the first group]
    #[arg(long, value_name = "NAME")]
    group: Option<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve { config } => serve(&config),
        Command::CheckConfig { file } => check_config(&file),
        Command::HashPassword { password } => hash_password(password),
        Command::Triggers { action } => manage_triggers(action),
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

/// tokio's multi-thread runtime as `runtime:` shapes it. With `per_core`
/// (the default) the sessions get their own single-threaded runtimes
/// (`frontend::cores`), one per CPU the process may use unless
/// `worker_threads` says otherwise, and this one keeps one worker for the
/// rest; without, it serves everything with `worker_threads` workers
/// (tokio's default: one per CPU).
fn build_runtime(settings: &config::RuntimeSettings) -> Result<tokio::runtime::Runtime, String> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    if settings.per_core {
        let n = match settings.worker_threads {
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        sluice::frontend::cores::start(n)?;
        builder.worker_threads(1);
    } else if let Some(n) = settings.worker_threads {
        builder.worker_threads(n);
    }
    builder
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}

fn serve(path: &Path) -> Result<(), Failure> {
    let config = Config::load(path).map_err(|e| e.to_string())?;
    sluice::logging::init(config.log.format, &config.log.level, config.log.sql_log)?;
    sluice::logging::set_max_sql_length(config.log.max_sql_length);
    // Before the runtime starts its threads: the limit applies to them all.
    sluice::app::check_open_files(&config);
    let runtime = build_runtime(&config.runtime)?;
    let result = runtime
        .block_on(sluice::app::run(config, path.to_path_buf()))
        .map_err(|e| Failure::Tool(e.to_string()));
    // Sessions still running after the shutdown timeout are dropped here;
    // never wait long on a blocking task (e.g. a DNS lookup). (Sessions on
    // the `per_core` session threads end with the process right after: their
    // sockets close, and the servers roll back what they left open.)
    runtime.shutdown_timeout(Duration::from_millis(500));
    result
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

const DEFAULT_CONFIG: &str = "config/sluice.yaml";

fn manage_triggers(action: TriggersAction) -> Result<(), Failure> {
    // `sql --tables` needs no server, and no configuration file unless one is named.
    if let TriggersAction::Sql {
        target,
        tables: Some(tables),
    } = &action
    {
        let freshness = match &target.config {
            Some(path) => load_config(path)?.freshness,
            None if Path::new(DEFAULT_CONFIG).exists() => load_config(Path::new(DEFAULT_CONFIG))?.freshness,
            None => Freshness::default(),
        };
        let tables: Vec<String> = tables.iter().filter(|t| !t.is_empty()).cloned().collect();
        if tables.is_empty() {
            return Err(Failure::Tool("--tables names no table".to_owned()));
        }
        print!(
            "{}",
            triggers::script(&freshness.schema, &target.schema, &tables, freshness.slots)
        );
        return Ok(());
    }
    let target = match &action {
        TriggersAction::Install(t) | TriggersAction::Uninstall(t) | TriggersAction::Status(t) => t,
        TriggersAction::Sql { target, .. } => target,
    };
    let config = load_config(target.config.as_deref().unwrap_or(Path::new(DEFAULT_CONFIG)))?;
    let group = match &target.group {
        Some(name) => config.groups.iter().find(|g| &g.name == name).ok_or_else(|| {
            let names: Vec<&str> = config.groups.iter().map(|g| g.name.as_str()).collect();
            format!(
                "no group `{name}` in the configuration (groups: {})",
                names.join(", ")
            )
        })?,
        None => config
            .groups
            .first()
            .ok_or_else(|| "the configuration has no group".to_owned())?,
    };
    let master = group.master.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async {
        let opts = sluice::backend::auth_guard::mysql_async_opts(&master, config.backend_tls(&master))?;
        let connect = mysql_async::Conn::new(opts);
        // An operator waits gladly a little longer than the proxy would.
        let timeout = config.backend.connect_timeout.max(Duration::from_secs(10));
        let mut conn = match tokio::time::timeout(timeout, connect).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => return Err(format!("cannot connect to the master {}: {e}", master.addr).into()),
            Err(_) => {
                return Err(format!(
                    "cannot connect to the master {}: no answer within {timeout:?}",
                    master.addr
                )
                .into())
            }
        };
        let result = run_triggers_action(&mut conn, &action, &config.freshness, &target.schema).await;
        let _ = conn.disconnect().await;
        result
    })
}

async fn run_triggers_action(
    conn: &mut mysql_async::Conn,
    action: &TriggersAction,
    freshness: &Freshness,
    db: &str,
) -> Result<(), Failure> {
    let counter_schema = freshness.schema.as_str();
    let report = match action {
        TriggersAction::Install(_) => triggers::install(conn, counter_schema, db, freshness.slots).await,
        TriggersAction::Uninstall(_) => triggers::uninstall(conn, counter_schema, db).await,
        TriggersAction::Status(_) => {
            let status = triggers::status(conn, counter_schema, db)
                .await
                .map_err(|e| e.to_string())?;
            print!("{status}");
            return Ok(());
        }
        TriggersAction::Sql { .. } => {
            let tables = triggers::base_tables(conn, db).await.map_err(|e| e.to_string())?;
            if tables.is_empty() {
                eprintln!(
                    "sluice: schema `{db}` has no base tables: the script only creates the counter table"
                );
            }
            print!(
                "{}",
                triggers::script(counter_schema, db, &tables, freshness.slots)
            );
            return Ok(());
        }
    };
    match report {
        Ok(report) => {
            print!("{report}");
            Ok(())
        }
        // The report says what was done and what failed.
        Err(TriggerError::Incomplete(report)) => Err(Failure::Tool(report.to_string())),
        Err(e) => Err(Failure::Tool(e.to_string())),
    }
}

fn load_config(path: &Path) -> Result<Config, Failure> {
    Config::load(path).map_err(|e| Failure::Located(e.to_string()))
}

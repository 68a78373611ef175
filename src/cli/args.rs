//! The command line of spec/COMMAND.md, as clap definitions.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::ListState;
use clap::{Args, Parser, Subcommand};

use super::duration;

#[derive(Debug, Parser)]
#[command(name = "ukue", about = "A job queue in one SQLite file", disable_version_flag = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Cmd,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Create an empty ukue file (or add the tables to a SQLite database)
    Init {
        /// The ukue file
        file: PathBuf,
    },
    /// Add a job; prints its id
    Add(AddArgs),
    /// Run a command once per job until stopped
    Work(WorkArgs),
    /// Serve the HTTP API
    Serve(ServeArgs),
    /// Counts per queue
    Stats {
        /// The ukue file
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Jobs in id order
    List(ListArgs),
    /// One job with its payload and last error
    Show {
        /// The ukue file
        file: PathBuf,
        /// The job's id
        id: i64,
        #[arg(long)]
        json: bool,
    },
    /// Send dead jobs back to ready, attempts reset to 0
    Retry {
        /// The ukue file
        file: PathBuf,
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        ids: Vec<i64>,
        /// Every dead job
        #[arg(long)]
        all: bool,
        /// With --all: only this queue
        #[arg(long, requires = "all", value_parser = queue_name)]
        queue: Option<String>,
    },
    /// Delete dead or done jobs
    Purge {
        /// The ukue file
        file: PathBuf,
        #[arg(long, value_parser = ["dead", "done"])]
        state: String,
        #[arg(long, value_parser = queue_name)]
        queue: Option<String>,
    },
    /// Delete jobs in any state
    Delete {
        /// The ukue file
        file: PathBuf,
        #[arg(required = true)]
        ids: Vec<i64>,
    },
    /// Print the version
    Version,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The ukue file
    pub file: PathBuf,
    /// The queue (1 to 200 characters)
    #[arg(value_parser = queue_name)]
    pub queue: String,
    /// The payload; read from stdin when left out or `-`
    pub payload: Option<OsString>,
    /// Run no sooner than this from now (Go syntax: 30s, 5m); a delay
    /// other than 0 and --at are refused together (`add.delay-and-at`)
    #[arg(long, value_parser = duration::parse)]
    pub delay: Option<Duration>,
    /// Run no sooner than this time (RFC 3339)
    #[arg(long, value_parser = super::time::parse)]
    pub at: Option<i64>,
    /// How many times the job may be tried
    #[arg(long, value_parser = clap::value_parser!(i64).range(1..))]
    pub attempts: Option<i64>,
    /// Higher runs first (-100..100)
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(i64).range(-100..=100))]
    pub priority: Option<i64>,
}

#[derive(Debug, Args)]
pub struct WorkArgs {
    /// The ukue file
    pub file: PathBuf,
    /// The queue (1 to 200 characters)
    #[arg(value_parser = queue_name)]
    pub queue: String,
    /// Jobs run at once
    #[arg(long, default_value = "1", value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrency: u16,
    /// Each claim's lease, renewed every third of it (at least 3ms)
    #[arg(long, default_value = "1m", value_parser = lease_duration)]
    pub lease: Duration,
    /// Stop a command that runs longer, and fail the attempt (0: none)
    #[arg(long, default_value = "0", value_parser = duration::parse)]
    pub timeout: Duration,
    /// How often to look for jobs when there are none
    #[arg(long, default_value = "1s", value_parser = positive_duration)]
    pub poll: Duration,
    /// After SIGINT or SIGTERM, how long running commands may go on
    #[arg(long, default_value = "30s", value_parser = duration::parse)]
    pub grace: Duration,
    /// Keep finished jobs as done instead of deleting them
    #[arg(long)]
    pub keep_done: bool,
    /// Print only errors
    #[arg(long)]
    pub quiet: bool,
    /// The command to run for each job, after `--`
    #[arg(last = true, required = true, num_args = 1..)]
    pub command: Vec<OsString>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The ukue file
    pub file: PathBuf,
    /// Where to listen (host:port)
    #[arg(long, default_value = "127.0.0.1:7660", value_parser = listen_addr)]
    pub addr: ListenAddr,
    /// A file holding the token clients must send (UKUE_TOKEN works too)
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// Allow listening beyond this machine without a token
    #[arg(long)]
    pub allow_no_token: bool,
    /// The largest request body, in bytes
    #[arg(long, default_value = "1048576", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_body: u64,
    /// Keep finished jobs as done instead of deleting them
    #[arg(long)]
    pub keep_done: bool,
}

/// `--addr`: a host (empty for every interface) and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenAddr {
    pub host: String,
    pub port: u16,
}

fn listen_addr(text: &str) -> Result<ListenAddr, String> {
    let bad = || format!("--addr {text:?} is not host:port");
    let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    Ok(ListenAddr { host: host.to_string(), port: port.parse().map_err(|_| bad())? })
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// The ukue file
    pub file: PathBuf,
    #[arg(long, value_parser = queue_name)]
    pub queue: Option<String>,
    /// ready, delayed, running, dead or done
    #[arg(long)]
    pub state: Option<ListState>,
    #[arg(long, default_value = "50", value_parser = clap::value_parser!(i64).range(1..=1000))]
    pub limit: i64,
    /// Only jobs with a larger id
    #[arg(long, default_value = "0", allow_negative_numbers = true)]
    pub after: i64,
    #[arg(long)]
    pub json: bool,
}

fn queue_name(text: &str) -> Result<String, String> {
    crate::validate::queue(text).map_err(|e| e.to_string())?;
    Ok(text.to_string())
}

fn positive_duration(text: &str) -> Result<Duration, String> {
    let d = duration::parse(text)?;
    if d.is_zero() {
        return Err(format!("{text:?} must be more than 0"));
    }
    Ok(d)
}

/// A lease of 3 ms at least, as the published command asks: it renews
/// every third of the lease, in whole milliseconds.
fn lease_duration(text: &str) -> Result<Duration, String> {
    let d = duration::parse(text)?;
    if d < Duration::from_millis(3) {
        return Err(format!("{text:?} is too short (at least 3ms)"));
    }
    Ok(d)
}

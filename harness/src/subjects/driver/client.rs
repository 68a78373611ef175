//! The runner's side of the step-driver protocol: start a driver process,
//! read its hello, send requests and read answers, with a deadline so that
//! a driver that hangs is reported rather than waited on for ever.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use super::{Answer, Hello, Request, PROTOCOL_VERSION};

/// How long a driver may take to answer one request.
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(20);

/// A driver command: a program and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverCommand {
    pub program: String,
    pub args: Vec<String>,
    /// Extra environment (UKUE_BROKEN, say).
    pub env: Vec<(String, String)>,
}

impl DriverCommand {
    /// Splits `CMD` on whitespace: `python3 clients/python/ukue_driver.py`;
    /// leading `NAME=VALUE` words set the driver's environment
    /// (`UKUE_BROKEN=renew-without-token ukue-driver`).
    pub fn parse(text: &str) -> Option<DriverCommand> {
        let mut words = text.split_whitespace().map(str::to_string).peekable();
        let mut env = Vec::new();
        while let Some((key, value)) = words.peek().and_then(|w| w.split_once('=')) {
            if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                break;
            }
            env.push((key.to_string(), value.to_string()));
            words.next();
        }
        let program = words.next()?;
        Some(DriverCommand { program, args: words.collect(), env })
    }

    pub fn env(mut self, key: &str, value: &str) -> DriverCommand {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// The command as one line (for replay commands).
    pub fn display(&self) -> String {
        let mut words: Vec<String> = self.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        words.push(self.program.clone());
        words.extend(self.args.iter().cloned());
        words.join(" ")
    }
}

/// One running driver process.
#[derive(Debug)]
pub struct DriverProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<std::io::Result<String>>,
    pub hello: Hello,
}

impl DriverProcess {
    /// Starts the driver and reads its hello; its stderr goes to
    /// `stderr_log`, or with None to this process's stderr.
    pub fn start(command: &DriverCommand, stderr_log: Option<&Path>) -> Result<DriverProcess, String> {
        let stderr = match stderr_log {
            Some(path) => {
                Stdio::from(std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?)
            }
            None => Stdio::inherit(),
        };
        let mut child = Command::new(&command.program)
            .args(&command.args)
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start the driver {}: {e}", command.display()))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let stdin = child.stdin.take();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let end = line.is_err();
                if tx.send(line).is_err() || end {
                    return;
                }
            }
        });
        let mut driver = DriverProcess {
            child,
            stdin,
            lines: rx,
            hello: Hello { driver: String::new(), protocol: 0, capabilities: vec![] },
        };
        let line = driver.read_line().map_err(|e| format!("{e} (waiting for its hello)"))?;
        let hello: Hello = serde_json::from_str(&line)
            .map_err(|e| format!("the driver's hello {line:?} is not a hello: {e}"))?;
        if hello.protocol != PROTOCOL_VERSION {
            return Err(format!(
                "the driver {} speaks protocol {}, this runner protocol {PROTOCOL_VERSION}",
                hello.driver, hello.protocol
            ));
        }
        driver.hello = hello;
        Ok(driver)
    }

    fn read_line(&mut self) -> Result<String, String> {
        match self.lines.recv_timeout(ANSWER_DEADLINE) {
            Ok(Ok(line)) => Ok(line),
            Ok(Err(e)) => Err(format!("cannot read the driver's output: {e}")),
            Err(RecvTimeoutError::Timeout) => {
                self.kill();
                Err(format!("the driver did not answer within {} s", ANSWER_DEADLINE.as_secs()))
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                Err(format!("the driver closed its output ({status})"))
            }
        }
    }

    /// Sends one request and reads its answer.
    pub fn request(&mut self, request: &Request) -> Result<Answer, String> {
        let line = serde_json::to_string(request).map_err(|e| e.to_string())?;
        self.request_line(&line)
            .and_then(|answer| serde_json::from_str(&answer).map_err(|e| format!("answer {answer:?}: {e}")))
    }

    /// Sends one raw line and reads the raw answer line.
    pub fn request_line(&mut self, line: &str) -> Result<String, String> {
        let stdin = self.stdin.as_mut().ok_or("the driver's stdin is closed")?;
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("cannot write to the driver: {e}"))?;
        self.read_line()
    }

    /// Kills the driver's group while the driver has not been reaped (once
    /// it has, its id may be another group's).
    fn kill(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(self.child.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.child.wait();
    }
}

impl Drop for DriverProcess {
    fn drop(&mut self) {
        // Every answer has been read: nothing the driver does now matters.
        drop(self.stdin.take());
        self.kill();
    }
}

//! `ukue serve`: the HTTP API of the published API.md, for programs on
//! other machines (SQLite's locks do not work over network file systems).
//! The API runs on tokio; no step on the file runs on its threads: the
//! steps that write run one after another on a writer thread, the reads
//! on blocking threads (`store.rs`), so a busy file never stalls them.

mod guard;
mod routes;
mod store;
mod wire;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::args::{ListenAddr, ServeArgs};
use crate::OpenOptions;

/// The longest a claim may wait for a job (API.md).
pub const MAX_WAIT: Duration = Duration::from_secs(30);
/// How long a stopping server lets requests in flight finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// What every request can reach.
pub(crate) struct Server {
    pub store: store::Store,
    pub token: Option<String>,
    pub max_body: usize,
    /// Set once SIGINT or SIGTERM came: waiting claims answer 204 at once.
    pub stop: tokio::sync::watch::Receiver<bool>,
}

/// Serves the API of the file `args` names until SIGINT or SIGTERM; a file
/// that FORMAT.md says to refuse is refused before anything listens.
pub fn serve(options: OpenOptions, args: ServeArgs) -> Result<()> {
    serve_with(options, args, |api| api)
}

/// Like [`serve`], with layers of the caller's around the whole API, its
/// guards included, as a Go program wraps the handler that the published
/// `server.New` returns: logging, metrics, a gateway's own checks.
pub fn serve_with(
    options: OpenOptions,
    args: ServeArgs,
    around: impl FnOnce(axum::Router) -> axum::Router,
) -> Result<()> {
    drop(options.clone().access(crate::Access::Existing).open(&args.file)?);
    let token = token(&args)?;
    let loopback = is_loopback(&args.addr.host);
    if token.is_none() && !loopback && !args.allow_no_token {
        bail!(
            "listening beyond this machine needs a token: set UKUE_TOKEN or --token-file, \
             or pass --allow-no-token if something else guards the port"
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(bind_addr(&args.addr)?)
            .await
            .with_context(|| format!("listening on {}:{}", args.addr.host, args.addr.port))?;
        let bound = listener.local_addr()?;
        let auth = if token.is_some() { "token required" } else { "no token" };
        eprintln!("ukue serve: {} on http://{bound} ({auth})", args.file.display());
        let Api { router, stop: stop_tx } = build(options, &args, token, bound);
        let app = around(router);
        let mut stopped = stop_tx.subscribe();
        let serving = axum::serve(listener, app).with_graceful_shutdown(async move {
            let _ = stopped.wait_for(|s| *s).await;
        });
        tokio::select! {
            r = serving => r.context("serving")?,
            r = signals(stop_tx) => r?,
        }
        eprintln!("ukue serve: stopped");
        anyhow::Ok(())
    })
}

/// The API of a file as a router that listens nowhere, for a program that
/// serves it itself (among routes of its own, or in-process as the fuzzer
/// does), as the published `server.New` hands back a handler; and how to
/// stop it.
pub struct Api {
    pub router: axum::Router,
    /// Sending true answers waiting claims at once (204), as a stopping
    /// server does.
    pub stop: tokio::sync::watch::Sender<bool>,
}

/// The API of the file `args` names ([`Api`]), checked as [`serve`]
/// checks it (a file to refuse, the token), as if it listened at `bound`
/// (the Host check of a server without a token). Its steps need a tokio
/// runtime.
pub fn api(options: OpenOptions, args: &ServeArgs, bound: SocketAddr) -> Result<Api> {
    drop(options.clone().access(crate::Access::Existing).open(&args.file)?);
    let token = token(args)?;
    Ok(build(options, args, token, bound))
}

fn build(options: OpenOptions, args: &ServeArgs, token: Option<String>, bound: SocketAddr) -> Api {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let server = Arc::new(Server {
        store: store::Store::new(&args.file, options, args.keep_done),
        max_body: usize::try_from(args.max_body).unwrap_or(usize::MAX),
        token,
        stop: stopped,
    });
    // With a token, the token is the guard, and any host name is answered
    // (as the published server does): a name of this machine in
    // /etc/hosts, a tunnel's.
    let hosts =
        (is_loopback(&args.addr.host) && server.token.is_none()).then(|| guard::Hosts::loopback(bound));
    Api { router: routes::router(server, hosts), stop }
}

/// Waits for SIGINT or SIGTERM, tells everyone, then gives requests in
/// flight [`SHUTDOWN_GRACE`] before the server stops regardless.
async fn signals(stop: tokio::sync::watch::Sender<bool>) -> Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
    eprintln!("ukue serve: stopping");
    let _ = stop.send(true);
    tokio::time::sleep(SHUTDOWN_GRACE).await;
    Ok(())
}

fn token(args: &ServeArgs) -> Result<Option<String>> {
    if let Some(path) = &args.token_file {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let token = text.trim();
        if token.is_empty() {
            bail!("token file {} is empty", path.display());
        }
        return Ok(Some(token.to_string()));
    }
    Ok(std::env::var("UKUE_TOKEN").ok().filter(|t| !t.is_empty()))
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn bind_addr(addr: &ListenAddr) -> Result<SocketAddr> {
    let ip = match addr.host.as_str() {
        "" => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        h if h.eq_ignore_ascii_case("localhost") => IpAddr::V4(Ipv4Addr::LOCALHOST),
        h => match h.parse() {
            Ok(ip) => ip,
            Err(_) => {
                use std::net::ToSocketAddrs;
                return (h, addr.port)
                    .to_socket_addrs()?
                    .next()
                    .with_context(|| format!("{h}: no address for this name"));
            }
        },
    };
    Ok(SocketAddr::new(ip, addr.port))
}

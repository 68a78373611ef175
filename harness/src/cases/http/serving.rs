//! The `serve` command's own options and its guards (spec/COMMAND.md §6,
//! §13.2): where it listens, its token, the host names it answers, its
//! body limit at the byte, and how it stops.

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::holding::waiting_claim;
use super::{add_of_size, all_refused, expect, holds_jobs, start, Refused, TOKEN};
use crate::cases::{Case, CaseResult};
use crate::subjects::ctx::{clip, path_str, Ctx};
use crate::subjects::server::{self, read_answer, Client, Started};
use crate::subjects::Failure;
use crate::{ensure, ensure_eq};

pub fn cases(case: impl Fn(&'static str, &'static str, fn(&mut Ctx) -> CaseResult) -> Case) -> Vec<Case> {
    vec![
        case(
            "http/hosts",
            "without a token, requests to localhost, 127.0.0.1 or [::1] are answered whatever the port the Host names; with a token, whatever the host",
            hosts,
        ),
        case(
            "http/body-exact",
            "a body of exactly --max-body bytes is read and one byte more refused, and so for the default of 1 MiB",
            body_exact,
        ),
        case(
            "http/serve-options",
            "--token-file (trimmed, over UKUE_TOKEN), an empty UKUE_TOKEN, a bad token file, a bad --addr, --addr :PORT, a missing file not created",
            serve_options,
        ),
        case(
            "http/stop",
            "on SIGTERM and on SIGINT a waiting claim answers 204 and serve exits 0 within 10 s",
            stop,
        ),
    ]
}

fn hosts(ctx: &mut Ctx) -> CaseResult {
    let (file, open, client) = start(ctx, &[], &[])?;
    let port = open.port;
    let this_machine = [
        "localhost:1".to_string(),
        "localhost".into(),
        "127.0.0.1".into(),
        format!("[::1]:{port}"),
        "127.0.0.1:8080".into(),
    ];
    for host in &this_machine {
        expect(
            &client.send("GET", "/v1/stats", None, &[("Host", host)])?,
            200,
            &format!("GET /v1/stats with Host: {host}"),
        )?;
    }
    let add = br#"{"queue": "q"}"#.as_slice();
    expect(
        &client.send("POST", "/v1/jobs", Some(add), &[("Host", "localhost:9")])?,
        201,
        "an add with Host: localhost:9",
    )?;
    drop(open);
    let guarded = server::serve(ctx, &file, &[], &[("UKUE_TOKEN", TOKEN)])?;
    let client = Client::new(guarded.port, Some(TOKEN));
    let evil = format!("evil.example:{}", guarded.port);
    expect(
        &client.send("GET", "/v1/stats", None, &[("Host", &evil)])?,
        200,
        &format!("GET /v1/stats with the token and Host: {evil}"),
    )?;
    expect(
        &client.send("POST", "/v1/jobs", Some(add), &[("Host", "ukue-box")])?,
        201,
        "an add with the token and Host: ukue-box",
    )?;
    holds_jobs(ctx, &file, 2, "after the two adds")
}

fn body_exact(ctx: &mut Ctx) -> CaseResult {
    const MIB: usize = 1 << 20;
    let (file, limited, _) = start(ctx, &["--max-body", "1000"], &[])?;
    expect(
        &add_of_size(limited.port, None, 1000)?,
        201,
        "an add of exactly 1000 bytes to serve --max-body 1000",
    )?;
    let over = add_of_size(limited.port, None, 1001)?;
    all_refused(&[Refused {
        what: "an add of 1001 bytes to serve --max-body 1000".into(),
        reply: over,
        published: 413,
    }])?;
    holds_jobs(ctx, &file, 1, "after an add of 1000 bytes and a refused one of 1001")?;
    drop(limited);
    let default = server::serve(ctx, &file, &[], &[])?;
    expect(
        &add_of_size(default.port, None, MIB)?,
        201,
        "an add of exactly 1 MiB to serve without --max-body",
    )?;
    let over = add_of_size(default.port, None, MIB + 1)?;
    all_refused(&[Refused {
        what: "an add of 1 MiB and a byte to serve without --max-body".into(),
        reply: over,
        published: 413,
    }])?;
    holds_jobs(ctx, &file, 2, "after adds of 1 MiB and (refused) 1 MiB and a byte")
}

/// `serve` with `extra` and `env` ends without listening, and not with success.
fn refused_to_start(
    ctx: &Ctx,
    file: &Path,
    host: &str,
    extra: &[&str],
    env: &[(&str, &str)],
    what: &str,
) -> CaseResult {
    let subject = ctx.subject().clone();
    match server::launch(&ctx.procs, &ctx.dir, &subject, file, host, extra, env)? {
        Started::Exited { status, .. } if !status.success() => Ok(()),
        Started::Exited { status, stderr } => Err(Failure::fail(
            format!("{what}: an error"),
            format!("it exited ({status}): {}", clip(&stderr)),
        )),
        Started::Listening(_) => {
            Err(Failure::fail(format!("{what}: an error before anything listens"), "it listened"))
        }
    }
}

fn serve_options(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    let token_file = ctx.path("token");
    std::fs::write(&token_file, "  s3cret-from-file \n")?;
    let env = [("UKUE_TOKEN", "from-the-environment")];
    let guarded = server::serve(ctx, &file, &["--token-file", path_str(&token_file)], &env)?;
    let port = guarded.port;
    expect(
        &Client::new(port, Some("s3cret-from-file")).get("/v1/stats")?,
        200,
        "GET /v1/stats with the token file's text, trimmed",
    )?;
    for (who, token) in
        [("UKUE_TOKEN's token (the file wins)", Some("from-the-environment")), ("no token", None)]
    {
        let reply = Client::new(port, token).get("/v1/stats")?;
        all_refused(&[Refused { what: format!("GET /v1/stats with {who}"), reply, published: 401 }])?;
    }
    drop(guarded);
    let open = server::serve(ctx, &file, &[], &[("UKUE_TOKEN", "")])?;
    expect(
        &Client::new(open.port, None).get("/v1/stats")?,
        200,
        "GET /v1/stats without a token, UKUE_TOKEN empty",
    )?;
    drop(open);

    let blank = ctx.path("blank-token");
    std::fs::write(&blank, " \n\t\n")?;
    refused_to_start(
        ctx,
        &file,
        "127.0.0.1",
        &["--token-file", path_str(&blank)],
        &[],
        "serve --token-file of whitespace only",
    )?;
    let missing_token = ctx.path("no-such-token");
    refused_to_start(
        ctx,
        &file,
        "127.0.0.1",
        &["--token-file", path_str(&missing_token)],
        &[],
        "serve --token-file of a missing file",
    )?;

    let subject = ctx.subject().clone();
    let bad_addr = ctx.run(&subject, &["serve", path_str(&file), "--addr", "nonsense"])?;
    ensure_eq!(bad_addr.status.code(), Some(2), "the exit status of serve --addr nonsense (a usage error)");
    let everywhere =
        match server::launch(&ctx.procs, &ctx.dir, &subject, &file, "", &[], &[("UKUE_TOKEN", TOKEN)])? {
            Started::Listening(server) => server,
            Started::Exited { status, stderr } => {
                return Err(Failure::fail(
                    "serve --addr :PORT (every interface, with a token) to listen",
                    format!("it exited ({status}): {}", clip(&stderr)),
                ))
            }
        };
    expect(
        &Client::new(everywhere.port, None).get("/v1/health")?,
        200,
        "GET /v1/health of serve --addr :PORT, on 127.0.0.1",
    )?;
    drop(everywhere);

    let missing = ctx.path("missing.ukue");
    refused_to_start(ctx, &missing, "127.0.0.1", &[], &[], "serve of a file that does not exist")?;
    let left: Vec<String> = ["", "-wal", "-shm", "-journal"]
        .iter()
        .map(|s| format!("{}{s}", path_str(&missing)))
        .filter(|p| Path::new(p).exists())
        .collect();
    ensure!(left.is_empty(), "no file made by serve of a path that does not exist", format!("{left:?}"));
    Ok(())
}

/// How long a stopping server may take, with only a waiting claim in flight.
const STOP_WITHIN: Duration = Duration::from_secs(10);

fn stop(ctx: &mut Ctx) -> CaseResult {
    let file = ctx.init("jobs.ukue")?;
    for signal in [Signal::SIGTERM, Signal::SIGINT] {
        let mut running = server::serve(ctx, &file, &[], &[])?;
        let mut claim = waiting_claim(ctx, running.port, "q", 25)?;
        let since = Instant::now();
        running.process.signal(signal);
        let what = format!("a claim waiting 25 s, once serve got {signal}");
        let reply = read_answer(&mut claim)
            .map_err(|f| Failure::fail(format!("{what}: 204"), format!("no answer: {}", f.seen)))?;
        ensure!(
            reply.status == 204 && since.elapsed() <= STOP_WITHIN,
            format!("{what}: 204 within {} s", STOP_WITHIN.as_secs()),
            format!("{} after {:.1} s", reply.show(), since.elapsed().as_secs_f64())
        );
        let status = running.process.wait_timeout(STOP_WITHIN.saturating_sub(since.elapsed()))?;
        ensure!(
            status.is_some_and(|s| s.success()),
            format!("serve to exit with status 0 within {} s of {signal}", STOP_WITHIN.as_secs()),
            status.map_or("it was still running".to_string(), |s| format!("it exited: {s}"))
        );
    }
    Ok(())
}

//! Connections: a client that sends its request slowly, and a connection
//! kept alive after a refusal (good practice beyond API.md: `should`).

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use serde_json::json;

use super::start;
use crate::cases::CaseResult;
use crate::ensure;
use crate::subjects::ctx::Ctx;
use crate::subjects::server::read_answer;

pub fn slow_client(ctx: &mut Ctx) -> CaseResult {
    let (_file, server, client) = start(ctx, &[], &[])?;
    // Many connections that send half a request head and stop.
    let mut slow = Vec::new();
    for _ in 0..64 {
        let mut stream = TcpStream::connect(("127.0.0.1", server.port))?;
        stream.write_all(b"POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")?;
        slow.push(stream);
    }
    let started = std::time::Instant::now();
    for i in 0..10 {
        client.add(json!({"queue": "q", "payload": format!("{i}")}))?;
    }
    ensure!(
        started.elapsed() < Duration::from_secs(20),
        "others served while slow clients hold connections",
        format!("10 adds took {:?}", started.elapsed())
    );
    drop(slow);
    Ok(())
}

/// How long a request's head waits alone for an early answer before its
/// body follows (either is right; an early answer is what this is about).
const EARLY: Duration = Duration::from_millis(500);
/// The least time between a head and its body, as from a slow client: a
/// body that comes at once after an early answer is often read anyway.
const BODY_AFTER: Duration = Duration::from_millis(200);

/// Refusals a server may give before it reads the body: a wrong method, a
/// request from another site, a job id that is not a number.
const REFUSED: &[(&str, &str, &str)] = &[
    ("PUT", "/v1/claim", ""),
    ("POST", "/v1/jobs", "Sec-Fetch-Site: cross-site\r\n"),
    ("POST", "/v1/jobs/abc/ack", ""),
];

/// A refused request's head is sent alone, then its body; the next request
/// on the connection must be answered, unless the refusal said
/// `Connection: close`. A server that answers early and closes without a
/// word leaves a client that reuses the connection (as most HTTP clients
/// do) with a request that has no answer, and a POST it cannot safely send
/// again.
pub fn keep_alive_after_refusal(ctx: &mut Ctx) -> CaseResult {
    let (_file, server, _client) = start(ctx, &[], &[])?;
    let port = server.port;
    let body = br#"{"token": "t"}"#;
    for (method, path, extra) in REFUSED {
        let what = format!("{method} {path}");
        let mut stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(Duration::from_secs(45)))?;
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes())?;
        let sent = std::time::Instant::now();
        // An answer before the body, if the server gives one.
        stream.set_read_timeout(Some(EARLY))?;
        let mut peek = [0u8; 1];
        let early = stream.peek(&mut peek).is_ok_and(|n| n > 0);
        stream.set_read_timeout(Some(Duration::from_secs(45)))?;
        std::thread::sleep(BODY_AFTER.saturating_sub(sent.elapsed()));
        let _ = stream.write_all(body);
        let refusal = read_answer(&mut stream)?;
        ensure!(
            (400..500).contains(&refusal.status),
            format!("{what}: refused with a 4xx status"),
            refusal.show()
        );
        if refusal.header("connection").is_some_and(|c| c.eq_ignore_ascii_case("close")) {
            continue;
        }
        let next = format!("GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
        let sent = stream.write_all(next.as_bytes());
        let answer =
            sent.map_err(|e| e.to_string()).and_then(|()| read_answer(&mut stream).map_err(|f| f.seen));
        let when = if early { "answered before its body came" } else { "answered once its body came" };
        ensure!(
            answer.as_ref().is_ok_and(|a| a.status == 200),
            format!(
                "after {what} ({when}, {} without Connection: close), GET /v1/health on the same connection: 200",
                refusal.status
            ),
            match answer {
                Ok(a) => a.show(),
                Err(e) => format!("no answer: {e}"),
            }
        );
    }
    Ok(())
}

//! `serve_requests`: the reference's HTTP API (`ukue::cli::serve::api`, the
//! router `ukue serve` listens with) driven in-process, without sockets,
//! by sequences of requests made of the fuzzer's bytes: methods, paths
//! and ids; the Host, Origin, Sec-Fetch-Site and Authorization headers;
//! bodies that are valid, near-valid or broken JSON, under, at and over
//! the limit. After every request: no panic, a status that COMMAND.md §13
//! names for it, a JSON object for every answer but a 204, and the file
//! keeps FORMAT.md §7's invariants. Where the request alone says what must
//! happen (COMMAND.md §13's items), the answer and the file must show it:
//! the guards' refusals (413, 403, 401, 404, 405), a bad id or a negative
//! delay refused, a lease and a retry_in in seconds, keep_done, a retry
//! of all dead jobs of one queue, the list's default limit, an add of
//! valid keys taken and its default max_attempts, a claim without `wait`
//! answered at once. Every time an answer gives is RFC 3339 in UTC with
//! three digits of milliseconds (the paused clock starts on a whole
//! second), every payload_base64 standard base64 with its padding; and
//! GET /v1/jobs/{id} and GET /v1/stats show the file as it is.
//!
//! Claims also go in time, on tokio's paused clock, which passes a wait
//! at once: a claim that waits with nothing added must answer 204 when its
//! wait, at most 30 s, is over (or 200 at once, for a job due already); one
//! whose queue gets a job during its wait takes it at once; and when a
//! claim's client leaves (its request dropped, as it starts or while it
//! waits), every ready job is ready again once the server's tasks have
//! ended, its attempts as they were (COMMAND.md http.claim-wait,
//! claim-wait-most, claim-empty, claim-left and claim-left-gives-back).
//!
//! With `UKUE_BROKEN=NAME` naming a broken server of ukue-broken
//! (crate::subjects::broken_serve), its layer goes around the API, so that
//! the target shows it finds it.

use std::future::Future;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use arbitrary::{Arbitrary, Unstructured};
use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use tower::ServiceExt;

use crate::check::model::START_MS;
use crate::subjects::broken::{self, ServeFlaw};
use crate::subjects::broken_serve::{flawed, Flawed};

/// The token of a server that has one.
const TOKEN: &str = "fuzz-token";
/// Where the in-process server says it listens (its Host check's port).
const BOUND: &str = "127.0.0.1:7660";
/// At most this many requests an input.
const MOST: usize = 48;
/// The longest a claim waits, in seconds (COMMAND.md http.claim-wait-most).
const LONGEST_WAIT: f64 = 30.0;
/// A waiting claim takes a job that this server adds within this many
/// seconds of the add's request (http.claim-wait says at once). The paused
/// clock moves on to the claim's next look, 250 ms on, while the add is
/// written on the server's writer thread, which tokio does not see.
const AT_ONCE: f64 = 1.0;
/// Of the clock that a claim's wait runs on (tokio's, paused): a little
/// for its timers' rounding to milliseconds.
const SLACK: f64 = 0.05;

/// How the server is set up for one input.
#[derive(Debug, Arbitrary)]
struct Setup {
    token: bool,
    keep_done: bool,
    /// The body limit: 64 bytes and 8 more for each.
    limit: u8,
    /// Jobs in the file before the server starts (modulo 128).
    jobs: u8,
}

#[derive(Debug, Clone, Copy, Arbitrary)]
enum Verb {
    Get,
    Post,
    Delete,
    Put,
    Patch,
    Head,
    Options,
}

impl Verb {
    fn method(self) -> Method {
        match self {
            Verb::Get => Method::GET,
            Verb::Post => Method::POST,
            Verb::Delete => Method::DELETE,
            Verb::Put => Method::PUT,
            Verb::Patch => Method::PATCH,
            Verb::Head => Method::HEAD,
            Verb::Options => Method::OPTIONS,
        }
    }
}

/// A job id in a path.
#[derive(Debug, Arbitrary)]
enum Id {
    /// One of the ids the server gave (or the prefilled ones).
    Known(u8),
    Number(i64),
    Text(String),
}

#[derive(Debug, Arbitrary)]
enum Route {
    Health,
    Jobs { query: Option<ListQuery> },
    Job(Id),
    Ack(Id),
    Fail(Id),
    Extend(Id),
    Release(Id),
    Retry(Id),
    Claim,
    Stats,
    RetryAll,
    Purge,
    Other(String),
}

#[derive(Debug, Arbitrary)]
struct ListQuery {
    queue: Option<bool>,
    state: Option<u8>,
    after: Option<i16>,
    limit: Option<i16>,
    raw: Option<String>,
}

#[derive(Debug, Arbitrary)]
enum HostHeader {
    Localhost,
    LocalhostPort(u16),
    Ipv4,
    Ipv6,
    Other,
    Absent,
}

#[derive(Debug, Arbitrary)]
enum OriginHeader {
    Absent,
    Same,
    Other,
}

#[derive(Debug, Arbitrary)]
enum FetchSite {
    Absent,
    SameOrigin,
    None,
    SameSite,
    CrossSite,
}

#[derive(Debug, Arbitrary)]
enum Auth {
    Absent,
    Right,
    Wrong,
    NoScheme,
}

/// A duration as a body gives it: seconds, Go's syntax, or a wrong kind.
#[derive(Debug, Arbitrary)]
enum Span {
    Seconds(i16),
    Tenths(i16),
    Go(u8),
    Text(String),
    Flag(bool),
}

impl Span {
    fn json(&self) -> serde_json::Value {
        match self {
            Span::Seconds(s) => (*s).into(),
            Span::Tenths(t) => (f64::from(*t) / 10.0).into(),
            Span::Go(m) => format!("{m}m").into(),
            Span::Text(t) => t.clone().into(),
            Span::Flag(b) => (*b).into(),
        }
    }

    /// The milliseconds it stands for, when it is a number.
    fn ms(&self) -> Option<i64> {
        match self {
            Span::Seconds(s) => Some(i64::from(*s) * 1000),
            Span::Tenths(t) => Some(i64::from(*t) * 100),
            _ => None,
        }
    }
}

#[derive(Debug, Arbitrary)]
enum Payload {
    Text(String),
    Base64(Vec<u8>),
    Both,
}

/// A queue a body names.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Queue {
    A,
    B,
    /// Only the races name it ([`InTime`]): it has no job until one adds it.
    C,
}

impl Queue {
    fn name(self) -> &'static str {
        match self {
            Queue::A => "a",
            Queue::B => "b",
            Queue::C => "c",
        }
    }
}

/// A bool's byte, as the queue of inputs made before there was a c.
impl<'a> Arbitrary<'a> for Queue {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Queue> {
        Ok(if bool::arbitrary(u)? { Queue::B } else { Queue::A })
    }
}

#[derive(Debug, Arbitrary)]
enum Json {
    Empty,
    Add {
        queue: Option<Queue>,
        payload: Option<Payload>,
        priority: Option<i8>,
        max_attempts: Option<i8>,
        delay: Option<Span>,
    },
    Claim {
        queue: Option<Queue>,
        lease: Option<Span>,
        /// Seconds: only the well-formed claims that wait ([`ClaimHow`]) give one.
        #[arbitrary(default)]
        wait: Option<f64>,
    },
    Held {
        claim: u8,
        forged: bool,
        error: Option<String>,
        dead: Option<bool>,
        retry_in: Option<Span>,
        lease: Option<Span>,
    },
    Bulk {
        state: Option<u8>,
        queue: Option<Queue>,
    },
    /// Valid JSON with one thing wrong.
    Near(Box<Json>, Edit),
    /// Bytes as they come.
    Raw(Vec<u8>),
    /// A body of the limit's length, give or take.
    Sized(i8),
}

#[derive(Debug, Arbitrary)]
enum Edit {
    UnknownKey,
    TrailingText,
    Truncated,
    Array,
    WrongKind,
}

#[derive(Debug, Arbitrary)]
struct Call {
    verb: Verb,
    route: Route,
    host: HostHeader,
    origin: OriginHeader,
    site: FetchSite,
    auth: Auth,
    json_type: bool,
    body: Json,
    /// Seconds the clock moves before the request.
    advance: u8,
}

impl Call {
    /// POST /v1/jobs without a query: an add.
    fn route_is_jobs(&self) -> bool {
        matches!(self.route, Route::Jobs { query: None })
    }
}

#[derive(Debug, Arbitrary)]
enum Step {
    /// A request the fuzzer made up.
    Call(Call),
    /// A well-formed request of the API, as a client would send it.
    Well(Well),
}

/// How a well-formed claim goes in time, from one byte, so that inputs
/// made before claims waited read as they did: a byte under 128 is a claim
/// answered at once, as every claim was, with a lease of 1 to 8 s.
#[derive(Debug, Clone, Copy)]
struct ClaimHow {
    /// Seconds.
    lease: u8,
    time: InTime,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum InTime {
    AtOnce,
    /// Waits up to this many seconds; nothing is added meanwhile.
    Waits(f64),
    /// Waits `wait` s, and a job of its queue is added `after` s into it.
    Raced {
        after: u8,
        wait: f64,
    },
    /// Its client leaves as soon as the claim has started.
    LeavesAtOnce,
    /// Its client leaves `after` s into a wait of [`LEFT_WAIT`] s, and a
    /// job of its queue is added then.
    LeavesWaiting {
        after: u8,
    },
}

/// The wait of a claim whose client leaves while it waits.
const LEFT_WAIT: f64 = 10.0;

impl ClaimHow {
    fn arbitrary_byte(u: &mut Unstructured) -> arbitrary::Result<ClaimHow> {
        let b = u8::arbitrary(u)?;
        let p = b & 31;
        let time = match (b >= 128, (b >> 5) & 3) {
            (false, _) => InTime::AtOnce,
            (true, 0) => {
                // Under, at and over the longest wait, and far over it.
                const WAITS: [f64; 8] = [0.5, 1.0, 5.0, 29.5, 30.0, 30.5, 60.0, 86_400.0];
                InTime::Waits(WAITS[usize::from(p / 4)])
            }
            (true, 1) => {
                let after = p / 4;
                InTime::Raced { after, wait: if p % 2 == 0 { f64::from(after) + 5.0 } else { 45.0 } }
            }
            (true, 2) => InTime::LeavesAtOnce,
            (true, _) => InTime::LeavesWaiting { after: p / 8 },
        };
        Ok(ClaimHow { lease: b % 8 + 1, time })
    }

    /// The `wait` of its body, in seconds.
    fn wait(self) -> Option<f64> {
        match self.time {
            InTime::AtOnce | InTime::LeavesAtOnce => None,
            InTime::Waits(wait) | InTime::Raced { wait, .. } => Some(wait),
            InTime::LeavesWaiting { .. } => Some(LEFT_WAIT),
        }
    }
}

impl InTime {
    /// For the list of requests a failure shows.
    fn describe(self) -> String {
        match self {
            InTime::AtOnce => String::new(),
            InTime::Waits(_) => " (nothing is added while it waits)".into(),
            InTime::Raced { after, .. } => format!(" (a job of its queue is added {after} s into its wait)"),
            InTime::LeavesAtOnce => " (its client leaves as it starts)".into(),
            InTime::LeavesWaiting { after } => {
                format!(" (its client leaves {after} s into its wait; a job of its queue is added then)")
            }
        }
    }
}

#[derive(Debug, Arbitrary)]
enum Well {
    Add {
        queue_b: bool,
        priority: i8,
        max_attempts: u8,
        delay: u8,
    },
    Claim {
        queue_b: bool,
        #[arbitrary(with = ClaimHow::arbitrary_byte)]
        how: ClaimHow,
    },
    Ack {
        claim: u8,
    },
    Fail {
        claim: u8,
        retry_in: Option<u8>,
        dead: bool,
    },
    Extend {
        claim: u8,
        lease: u8,
    },
    Release {
        claim: u8,
    },
    Retry {
        job: u8,
    },
    RetryAll {
        queue: Option<bool>,
    },
    Purge {
        dead: bool,
        queue: Option<bool>,
    },
    List,
    Advance {
        seconds: u8,
    },
}

/// What the input's run knows: the ids the server gave, and the claims'
/// (id, token).
#[derive(Default)]
struct Seen {
    ids: Vec<i64>,
    claims: Vec<(i64, String)>,
}

/// The flaw that `UKUE_BROKEN` names, if it names a broken server.
fn fuzzed_flaw() -> ServeFlaw {
    static FLAW: OnceLock<ServeFlaw> = OnceLock::new();
    *FLAW.get_or_init(|| match std::env::var("UKUE_BROKEN") {
        Ok(name) if !name.is_empty() => match broken::bug(&name) {
            Some(bug) if bug.serve != ServeFlaw::None => bug.serve,
            _ => panic!("UKUE_BROKEN={name} names no broken server of ukue-broken"),
        },
        _ => ServeFlaw::None,
    })
}

/// `serve_requests`: see the module's comment.
pub fn serve_requests(data: &[u8]) {
    serve_requests_with(fuzzed_flaw(), data)
}

/// `serve_requests` with the layer of `flaw` around the API (`cargo test`
/// shows that each `catches-*` seed finds its flaw so).
pub fn serve_requests_with(flaw: ServeFlaw, data: &[u8]) {
    thread_local! {
        // Paused: a claim's wait passes as soon as nothing else is to be
        // done, so that the 30 s a claim may wait cost no time.
        static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("a tokio runtime");
    }
    super::fuzzing::in_scratch(|dir| RUNTIME.with(|rt| rt.block_on(run(dir, flaw, data))));
}

async fn run(dir: &Path, flaw: ServeFlaw, data: &[u8]) {
    let mut input = Unstructured::new(data);
    let Ok(setup) = Setup::arbitrary(&mut input) else { return };
    // A name of its own: the server of the input before may still be
    // closing its file (its writer thread ends on its own), and SQLite
    // removes a -wal file by name as it closes.
    static INPUTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = INPUTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = dir.join(format!("serve-{n}.ukue"));
    let clock = ukue::ManualClock::new(START_MS);
    let options = ukue::OpenOptions::default().clock(clock.clone());
    let mut seen = Seen::default();
    {
        let mut file = options.clone().access(ukue::Access::Create).open(&path).expect("a new ukue file");
        let jobs: Vec<ukue::NewJob> = (0..setup.jobs % 128)
            .map(|n| ukue::NewJob::new(if n % 2 == 0 { "a" } else { "b" }, vec![b'x']))
            .collect();
        seen.ids = file.add_batch(&jobs).expect("adding jobs");
        // Of each queue, a job or two held by a claim the input may use, and
        // one or two dead, so that a call about a held job or a retry needs
        // no claim or fail before it.
        let lease = Duration::from_secs(30);
        for n in 0..(jobs.len() / 4).min(4) {
            let queue = if n % 2 == 0 { "a" } else { "b" };
            if let ukue::Claim::Job(job) = file.claim_next(queue, lease).expect("claiming a job") {
                seen.claims.push((job.id, job.token));
            }
            if let ukue::Claim::Job(job) = file.claim_next(queue, lease).expect("claiming a job") {
                file.fail(job.id, &job.token, "set up dead", ukue::Retry::Never).expect("failing a job");
            }
        }
    }
    let mut args = serve_args(&path, &setup);
    if setup.token {
        let token_file = dir.join("token");
        std::fs::write(&token_file, format!("{TOKEN}\n")).expect("writing the token file");
        args.token_file = Some(token_file);
    }
    let expected = Expect { token: setup.token, limit: args.max_body as usize, keep_done: setup.keep_done };
    let Flawed { args, around } = flawed(&options, args, flaw).expect("the flaw's layer");
    let api = ukue::cli::serve::api(options, &args, BOUND.parse().expect("an address")).expect("the API");
    // Kept to the end: a server whose stop is dropped answers waiting claims at once.
    let _stop = api.stop;
    let router = around(api.router);
    let reader = crate::subjects::observe::file::open_read_only(&path).expect("a reading connection");
    let mut calls = Vec::new();
    while calls.len() < MOST && !input.is_empty() {
        let Ok(step) = Step::arbitrary(&mut input) else { break };
        let (call, timed) = match step {
            Step::Call(call) => (call, None),
            Step::Well(Well::Claim { queue_b, how }) if how.time != InTime::AtOnce => {
                let call = Well::Claim { queue_b, how }.call();
                let queue = match &call.body {
                    Json::Claim { queue, .. } => *queue,
                    _ => unreachable!("a claim's body"),
                };
                (call, Some((queue, how.time)))
            }
            Step::Well(well) => (well.call(), None),
        };
        clock.advance(Duration::from_secs(u64::from(call.advance)));
        let request = call.request(&seen, &expected);
        let before = Before::read(&reader, &request, &call);
        let how = timed.map_or(String::new(), |(_, time)| time.describe());
        calls.push(format!("{} {}{how}", request.method, request.uri));
        let context = || format!("the requests:\n  {}", calls.join("\n  "));
        let answered = match timed {
            None => {
                let asked = tokio::time::Instant::now();
                let answer = send(&router, &request).await;
                // A claim without `wait` looks once (http.claim-wait: 0 when
                // left out); on the paused clock a wait would pass.
                let waited = asked.elapsed().as_secs_f64();
                if matches!(call.body, Json::Claim { wait: None, .. }) && waited > AT_ONCE {
                    panic!(
                        "serve_requests: {} {} without a wait answered {} after {waited:.1} s (http.claim-wait)\n{}",
                        request.method,
                        request.uri,
                        answer.0,
                        context()
                    );
                }
                Some(answer)
            }
            Some((queue, time)) => {
                let timing = Timing { router: &router, reader: &reader, expect: &expected, queue };
                timing
                    .claim(time, &request, &mut seen)
                    .await
                    .unwrap_or_else(|e| panic!("serve_requests: {e}\n{}", context()))
            }
        };
        let Some((status, bytes)) = answered else {
            let findings = crate::check::file::invariants_of(&reader);
            if let Some(finding) = findings.first() {
                panic!("serve_requests: the file breaks FORMAT.md §7: {finding:?}\n{}", context());
            }
            continue;
        };
        let body = check_answer(&request, status, &bytes)
            .unwrap_or_else(|e| panic!("serve_requests: {e}\n{}", context()));
        let now = ukue::Clock::now_ms(&clock);
        expected
            .check(&request, &call, status, &body, &before, &reader, now)
            .unwrap_or_else(|e| panic!("serve_requests: {e}\n{}", context()));
        let findings = crate::check::file::invariants_of(&reader);
        if let Some(finding) = findings.first() {
            panic!("serve_requests: the file breaks FORMAT.md §7: {finding:?}\n{}", context());
        }
        seen.learn(&request, status, &body);
    }
}

/// `sent`'s answer: its status and body.
async fn send(router: &axum::Router, sent: &Sent) -> (StatusCode, axum::body::Bytes) {
    let answer = router.clone().oneshot(sent.build()).await.unwrap_or_else(|e| match e {});
    let status = answer.status();
    let bytes = axum::body::to_bytes(answer.into_body(), usize::MAX).await.expect("the answer's body");
    (status, bytes)
}

/// A well-formed claim that waits, races an add, or whose client leaves
/// ([`InTime`]), on tokio's paused clock, which moves only when the server
/// waits on a timer (the file's clock stands still meanwhile).
struct Timing<'a> {
    router: &'a axum::Router,
    reader: &'a rusqlite::Connection,
    expect: &'a Expect,
    /// The claim's queue.
    queue: Option<Queue>,
}

impl Timing<'_> {
    /// The claim's answer, if its client stayed for one, once what it shows
    /// in time, and what the file keeps after a client left, are checked.
    async fn claim(
        &self,
        time: InTime,
        claim: &Sent,
        seen: &mut Seen,
    ) -> Result<Option<(StatusCode, axum::body::Bytes)>, String> {
        let started = tokio::time::Instant::now();
        match time {
            InTime::AtOnce => Ok(Some(send(self.router, claim).await)),
            InTime::Waits(wait) => {
                let (status, bytes) = send(self.router, claim).await;
                let took = started.elapsed().as_secs_f64();
                let most = wait.min(LONGEST_WAIT);
                let wrong = match status.as_u16() {
                    // http.claim-empty: once the wait is over; http.claim-wait-most.
                    204 => (took - most).abs() > SLACK,
                    // Nothing became due while it waited: the job was there at once.
                    200 => took > SLACK,
                    _ => false,
                };
                if wrong {
                    return Err(format!(
                        "a claim with a wait of {wait} s answered {status} after {took:.3} s, with nothing added \
                         meanwhile: a job due at once, or none after {most} s (http.claim-wait, \
                         http.claim-wait-most, http.claim-empty)"
                    ));
                }
                Ok(Some((status, bytes)))
            }
            InTime::Raced { after, wait } => {
                let add = self.add();
                let claiming = async { (send(self.router, claim).await, tokio::time::Instant::now()) };
                let adding = async {
                    tokio::time::sleep(Duration::from_secs(after.into())).await;
                    // When it is sent: the clock may move on while it is written.
                    let sent = tokio::time::Instant::now();
                    (send(self.router, &add).await, sent)
                };
                let (((status, bytes), answered), ((added, add_body), added_at)) =
                    tokio::join!(claiming, adding);
                seen.learn(&add, added, &serde_json::from_slice(&add_body).unwrap_or_default());
                if added == StatusCode::CREATED {
                    let late = answered.saturating_duration_since(added_at).as_secs_f64();
                    if status != StatusCode::OK || late > AT_ONCE {
                        return Err(format!(
                            "a claim with a wait of {wait} s answered {status} {:.3} s after a job of its \
                             queue was added {after} s into its wait: at once, with a job (http.claim-wait)",
                            late
                        ));
                    }
                }
                Ok(Some((status, bytes)))
            }
            InTime::LeavesAtOnce | InTime::LeavesWaiting { .. } => self.left(time, claim, seen).await,
        }
    }

    /// A claim whose client leaves: once the server's tasks have ended,
    /// every job that was ready, and one added after the client left, is
    /// ready, its attempts as they were (http.claim-left, and
    /// http.claim-left-gives-back, which the reference keeps).
    async fn left(
        &self,
        time: InTime,
        claim: &Sent,
        seen: &mut Seen,
    ) -> Result<Option<(StatusCode, axum::body::Bytes)>, String> {
        let mut ready = self.ready();
        // Boxed, so that dropping it drops the request: the client leaves.
        let mut request = Box::pin(send(self.router, claim));
        let answered = match time {
            InTime::LeavesWaiting { after } => tokio::select! {
                biased;
                answer = &mut request => Some(answer),
                _ = tokio::time::sleep(Duration::from_secs(after.into())) => None,
            },
            _ => match std::future::poll_fn(|cx| std::task::Poll::Ready(request.as_mut().poll(cx))).await {
                std::task::Poll::Ready(answer) => Some(answer),
                std::task::Poll::Pending => None,
            },
        };
        if answered.is_some() {
            return Ok(answered);
        }
        drop(request);
        if let InTime::LeavesWaiting { .. } = time {
            let add = self.add();
            let (status, body) = send(self.router, &add).await;
            let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            if let (StatusCode::CREATED, Some(id)) = (status, body["id"].as_i64()) {
                ready.push((id, 0));
            }
            seen.learn(&add, status, &body);
        }
        // A claim that ran on without its client has ended by then.
        let wait = ClaimHow { lease: 0, time }.wait().unwrap_or(0.0);
        tokio::time::sleep(Duration::from_secs_f64(wait + 1.0)).await;
        settle().await?;
        for (id, attempts) in ready {
            let now: Option<(String, i64)> = self
                .reader
                .query_row("SELECT state, attempts FROM ukue_jobs WHERE id = ?1", [id], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .ok();
            if now.as_ref().is_none_or(|(state, n)| state != "ready" || *n != attempts) {
                return Err(format!(
                    "job {id} was ready with {attempts} attempts, and after a claim whose client left it \
                     is {now:?}: a job claimed for a client that left comes back, its attempt uncounted \
                     (http.claim-left, http.claim-left-gives-back)"
                ));
            }
        }
        Ok(None)
    }

    /// A well-formed add to the claim's queue, due at once, with a body
    /// under the smallest limit.
    fn add(&self) -> Sent {
        let mut add = Well::Add { queue_b: false, priority: 0, max_attempts: 2, delay: 0 }.call();
        add.body = Json::Add {
            queue: self.queue,
            payload: Some(Payload::Text("job".into())),
            priority: None,
            max_attempts: None,
            delay: None,
        };
        add.request(&Seen::default(), self.expect)
    }

    /// The ready jobs, with their attempts.
    fn ready(&self) -> Vec<(i64, i64)> {
        let mut rows = self
            .reader
            .prepare("SELECT id, attempts FROM ukue_jobs WHERE state = 'ready'")
            .expect("reading the file");
        let rows = rows.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).expect("reading the file");
        rows.collect::<Result<_, _>>().expect("reading the file")
    }
}

/// Waits until no task of the server's runs (a claim whose client left
/// runs to its end, and gives back what it took then), 30 s at most.
async fn settle() -> Result<(), String> {
    let metrics = tokio::runtime::Handle::current().metrics();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        // Lets them run; their steps run on the server's threads meanwhile.
        tokio::task::yield_now().await;
        let running = metrics.num_alive_tasks();
        if running == 0 {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return Err(format!("{running} tasks of the server still run 30 s after a claim's client left"));
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}

fn serve_args(path: &Path, setup: &Setup) -> ukue::cli::args::ServeArgs {
    use clap::Parser;
    let ukue::cli::args::Cli { command: ukue::cli::args::Cmd::Serve(mut args), .. } =
        ukue::cli::args::Cli::parse_from(["ukue", "serve", "f", "--addr", BOUND])
    else {
        unreachable!("a serve command line")
    };
    args.file = path.to_path_buf();
    args.max_body = 64 + 8 * u64::from(setup.limit);
    args.keep_done = setup.keep_done;
    args
}

impl Well {
    /// The call a client of the API makes: addressed to localhost, with the
    /// token, a JSON body of the endpoint's keys.
    fn call(self) -> Call {
        let queue = |b: bool| Some(if b { Queue::B } else { Queue::A });
        let (verb, route, body, advance) = match self {
            // An eighth of them a body of exactly the limit, which is taken
            // (http.max-body).
            Well::Add { delay: 224.., .. } => (Verb::Post, Route::Jobs { query: None }, Json::Sized(0), 0),
            Well::Add { queue_b, priority, max_attempts, delay } => (
                Verb::Post,
                Route::Jobs { query: None },
                Json::Add {
                    queue: queue(queue_b),
                    payload: Some(Payload::Text("job".into())),
                    priority: Some(priority % 101),
                    max_attempts: Some((max_attempts % 5 + 1) as i8),
                    // -1 s (refused) a fifth of the time.
                    delay: Some(Span::Seconds(i16::from(delay % 5) - 1)),
                },
                0,
            ),
            Well::Claim { queue_b, how } => (
                Verb::Post,
                Route::Claim,
                Json::Claim {
                    // A race, or a wait its client leaves, on a queue with no
                    // job until the race adds one.
                    queue: match how.time {
                        InTime::Raced { .. } | InTime::LeavesWaiting { .. } => Some(Queue::C),
                        _ => queue(queue_b),
                    },
                    lease: Some(Span::Seconds(i16::from(how.lease))),
                    wait: how.wait(),
                },
                0,
            ),
            Well::Ack { claim } => (Verb::Post, Route::Ack(Id::Known(u8::MAX)), held(claim), 0),
            Well::Fail { claim, retry_in, dead } => (
                Verb::Post,
                Route::Fail(Id::Known(u8::MAX)),
                Json::Held {
                    claim,
                    forged: false,
                    error: Some("failed".into()),
                    dead: Some(dead),
                    retry_in: retry_in.map(|r| Span::Seconds(i16::from(r % 8))),
                    lease: None,
                },
                0,
            ),
            Well::Extend { claim, lease } => (
                Verb::Post,
                Route::Extend(Id::Known(u8::MAX)),
                Json::Held {
                    claim,
                    forged: false,
                    error: None,
                    dead: None,
                    retry_in: None,
                    lease: Some(Span::Seconds(i16::from(lease % 8 + 1))),
                },
                0,
            ),
            Well::Release { claim } => (Verb::Post, Route::Release(Id::Known(u8::MAX)), held(claim), 0),
            Well::Retry { job } => (Verb::Post, Route::Retry(Id::Known(job)), Json::Empty, 0),
            Well::RetryAll { queue: q } => {
                (Verb::Post, Route::RetryAll, Json::Bulk { state: None, queue: q.and_then(queue) }, 0)
            }
            Well::Purge { dead, queue: q } => {
                let state = Some(if dead { 0 } else { 1 });
                (Verb::Post, Route::Purge, Json::Bulk { state, queue: q.and_then(queue) }, 0)
            }
            Well::List => (Verb::Get, Route::Jobs { query: None }, Json::Empty, 0),
            Well::Advance { seconds } => (Verb::Get, Route::Stats, Json::Empty, seconds % 16),
        };
        Call {
            verb,
            route,
            host: HostHeader::Localhost,
            origin: OriginHeader::Absent,
            site: FetchSite::Absent,
            auth: Auth::Right,
            json_type: true,
            body,
            advance,
        }
    }
}

fn held(claim: u8) -> Json {
    Json::Held { claim, forged: false, error: None, dead: None, retry_in: None, lease: None }
}

/// The endpoint a path names (COMMAND.md §13), if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    Health,
    Jobs,
    Job,
    Held,
    Retry,
    Claim,
    Stats,
    RetryAll,
    Purge,
    Unknown,
}

impl Endpoint {
    fn of(path: &str) -> Endpoint {
        let parts: Vec<&str> = path.strip_prefix("/v1/").map(|p| p.split('/').collect()).unwrap_or_default();
        match parts[..] {
            ["health"] => Endpoint::Health,
            ["jobs"] => Endpoint::Jobs,
            ["jobs", id] if !id.is_empty() => Endpoint::Job,
            ["jobs", id, "ack" | "fail" | "extend" | "release"] if !id.is_empty() => Endpoint::Held,
            ["jobs", id, "retry"] if !id.is_empty() => Endpoint::Retry,
            ["claim"] => Endpoint::Claim,
            ["stats"] => Endpoint::Stats,
            ["retry"] => Endpoint::RetryAll,
            ["purge"] => Endpoint::Purge,
            _ => Endpoint::Unknown,
        }
    }

    /// The methods it has (GET's take HEAD too, as axum routes them).
    fn has(self, method: &Method) -> bool {
        let get = *method == Method::GET || *method == Method::HEAD;
        match self {
            Endpoint::Health | Endpoint::Stats => get,
            Endpoint::Jobs => get || *method == Method::POST,
            Endpoint::Job => get || *method == Method::DELETE,
            Endpoint::Held | Endpoint::Retry | Endpoint::Claim | Endpoint::RetryAll | Endpoint::Purge => {
                *method == Method::POST
            }
            Endpoint::Unknown => false,
        }
    }

    /// The statuses COMMAND.md §13 names for a request it takes in.
    fn statuses(self) -> &'static [u16] {
        match self {
            Endpoint::Health | Endpoint::Stats => &[200],
            Endpoint::Jobs => &[200, 201, 400],
            Endpoint::Job | Endpoint::Retry => &[200, 400, 404],
            Endpoint::Held => &[200, 400, 409],
            Endpoint::Claim => &[200, 204, 400],
            Endpoint::RetryAll | Endpoint::Purge => &[200, 400],
            Endpoint::Unknown => &[404],
        }
    }
}

/// One request as sent, with what the target knows of it.
struct Sent {
    method: Method,
    uri: String,
    headers: Vec<(header::HeaderName, String)>,
    body: Vec<u8>,
    endpoint: Endpoint,
    /// The id of the path, when it is a valid one.
    id: Option<i64>,
    /// The id text of the path was no valid id.
    bad_id: bool,
    /// The path has an empty segment where an id goes (`/v1/jobs//ack`):
    /// a path that is no endpoint, or an id that is none; refused either way.
    empty_id: bool,
    /// The token the body gives (held calls).
    token: Option<String>,
}

impl Sent {
    fn build(&self) -> Request<Body> {
        let mut request = Request::builder().method(self.method.clone()).uri(self.uri.as_str());
        for (name, value) in &self.headers {
            request = request.header(name, value.as_str());
        }
        request.body(Body::from(self.body.clone())).unwrap_or_else(|_| {
            // A header value the http crate refuses: the request without them.
            let mut bare = Request::new(Body::from(self.body.clone()));
            *bare.method_mut() = self.method.clone();
            *bare.uri_mut() = self.uri.parse().unwrap_or_default();
            bare
        })
    }

    fn header(&self, name: &header::HeaderName) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// `uri` as a client sends it: one the http crate refuses (an id of `<`,
/// say) percent-encoded, as no client can send it bare, and as the checks
/// must see what was sent.
fn sendable(uri: String) -> String {
    if uri.parse::<axum::http::Uri>().is_ok() {
        return uri;
    }
    let mut out = String::with_capacity(uri.len());
    for c in uri.chars() {
        if c.is_ascii_alphanumeric() || "-._~/?&=:@!$'()*+,;".contains(c) {
            out.push(c);
        } else {
            let mut bytes = [0; 4];
            for b in c.encode_utf8(&mut bytes).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

fn id_text(id: &Id, seen: &Seen, claim: Option<(i64, String)>) -> String {
    match id {
        Id::Known(u8::MAX) if claim.is_some() => claim.map(|(id, _)| id.to_string()).unwrap_or_default(),
        Id::Known(i) => seen.ids.get(*i as usize % seen.ids.len().max(1)).copied().unwrap_or(1).to_string(),
        Id::Number(n) => n.to_string(),
        Id::Text(t) => t.chars().filter(|c| c.is_ascii_graphic() && !"/?#%".contains(*c)).collect(),
    }
}

impl Call {
    fn claim_of(&self, seen: &Seen) -> Option<(i64, String)> {
        let Json::Held { claim, forged, .. } = &self.body else { return None };
        let (id, token) = seen.claims.get(*claim as usize % seen.claims.len().max(1))?.clone();
        Some((id, if *forged { format!("{token}x") } else { token }))
    }

    fn request(&self, seen: &Seen, expect: &Expect) -> Sent {
        let claim = self.claim_of(seen);
        let id = |id: &Id| id_text(id, seen, claim.clone());
        let uri = match &self.route {
            Route::Health => "/v1/health".to_string(),
            Route::Jobs { query: None } => "/v1/jobs".to_string(),
            Route::Jobs { query: Some(q) } => format!("/v1/jobs?{}", q.text()),
            Route::Job(i) => format!("/v1/jobs/{}", id(i)),
            Route::Ack(i) => format!("/v1/jobs/{}/ack", id(i)),
            Route::Fail(i) => format!("/v1/jobs/{}/fail", id(i)),
            Route::Extend(i) => format!("/v1/jobs/{}/extend", id(i)),
            Route::Release(i) => format!("/v1/jobs/{}/release", id(i)),
            Route::Retry(i) => format!("/v1/jobs/{}/retry", id(i)),
            Route::Claim => "/v1/claim".to_string(),
            Route::Stats => "/v1/stats".to_string(),
            Route::RetryAll => "/v1/retry".to_string(),
            Route::Purge => "/v1/purge".to_string(),
            Route::Other(p) => {
                let p: String = p.chars().filter(|c| c.is_ascii_graphic() && !"?#%".contains(*c)).collect();
                format!("/{}", p.trim_start_matches('/'))
            }
        };
        let uri = sendable(uri);
        let path = uri.split('?').next().unwrap_or("").to_string();
        let endpoint = Endpoint::of(&path);
        let id_part = path.strip_prefix("/v1/jobs/").map(|rest| rest.split('/').next().unwrap_or(""));
        let id = id_part
            .and_then(|t| t.parse::<i64>().ok())
            .filter(|n| *n >= 1 && id_part.is_some_and(|t| t.bytes().all(|b| b.is_ascii_digit())));
        let bad_id = matches!(endpoint, Endpoint::Job | Endpoint::Held | Endpoint::Retry) && id.is_none();
        let empty_id = id_part == Some("");
        let mut headers = Vec::new();
        let host = match self.host {
            HostHeader::Localhost => Some("localhost".to_string()),
            HostHeader::LocalhostPort(p) => Some(format!("localhost:{p}")),
            HostHeader::Ipv4 => Some(BOUND.to_string()),
            HostHeader::Ipv6 => Some("[::1]:7660".to_string()),
            HostHeader::Other => Some("evil.example:7660".to_string()),
            HostHeader::Absent => None,
        };
        if let Some(host) = &host {
            headers.push((header::HOST, host.clone()));
        }
        match self.origin {
            OriginHeader::Absent => {}
            // A page's own origin names its host; without a Host there is
            // none to name (`Origin: http://` is no origin at all).
            OriginHeader::Same => {
                if let Some(host) = &host {
                    headers.push((header::ORIGIN, format!("http://{host}")))
                }
            }
            OriginHeader::Other => headers.push((header::ORIGIN, "http://evil.example".to_string())),
        }
        let site = match self.site {
            FetchSite::Absent => None,
            FetchSite::SameOrigin => Some("same-origin"),
            FetchSite::None => Some("none"),
            FetchSite::SameSite => Some("same-site"),
            FetchSite::CrossSite => Some("cross-site"),
        };
        if let Some(site) = site {
            headers.push((header::HeaderName::from_static("sec-fetch-site"), site.to_string()));
        }
        match self.auth {
            Auth::Absent => {}
            Auth::Right => headers.push((header::AUTHORIZATION, format!("Bearer {TOKEN}"))),
            Auth::Wrong => headers.push((header::AUTHORIZATION, format!("Bearer {TOKEN}2"))),
            Auth::NoScheme => headers.push((header::AUTHORIZATION, TOKEN.to_string())),
        }
        if self.json_type {
            headers.push((header::CONTENT_TYPE, "application/json".to_string()));
        }
        let body = self.body.bytes(claim.as_ref(), expect.limit);
        let token = claim.map(|(_, t)| t);
        Sent { method: self.verb.method(), uri, headers, body, endpoint, id, bad_id, empty_id, token }
    }
}

impl ListQuery {
    fn text(&self) -> String {
        let mut parts = Vec::new();
        if let Some(b) = self.queue {
            parts.push(format!("queue={}", if b { "b" } else { "a" }));
        }
        if let Some(s) = self.state {
            let states = ["ready", "delayed", "running", "dead", "done", "", "late"];
            parts.push(format!("state={}", states[s as usize % states.len()]));
        }
        if let Some(a) = self.after {
            parts.push(format!("after={a}"));
        }
        if let Some(l) = self.limit {
            parts.push(format!("limit={l}"));
        }
        if let Some(raw) = &self.raw {
            parts.push(raw.chars().filter(|c| c.is_ascii_alphanumeric() || "=&".contains(*c)).collect());
        }
        parts.join("&")
    }
}

impl Json {
    fn value(&self, claim: Option<&(i64, String)>) -> Option<serde_json::Value> {
        use serde_json::{json, Map, Value};
        let queue = |q: &Option<Queue>| q.map(|q| Value::from(q.name()));
        let mut object = Map::new();
        let mut put = |key: &str, value: Option<Value>| {
            if let Some(value) = value {
                object.insert(key.to_string(), value);
            }
        };
        match self {
            Json::Empty | Json::Raw(_) | Json::Sized(_) => return None,
            Json::Near(inner, _) => return inner.value(claim),
            Json::Add { queue: q, payload, priority, max_attempts, delay } => {
                put("queue", queue(q));
                match payload {
                    Some(Payload::Text(t)) => put("payload", Some(t.clone().into())),
                    Some(Payload::Base64(b)) => {
                        use base64::Engine;
                        put(
                            "payload_base64",
                            Some(base64::engine::general_purpose::STANDARD.encode(b).into()),
                        );
                    }
                    Some(Payload::Both) => {
                        put("payload", Some("a".into()));
                        put("payload_base64", Some("YQ==".into()));
                    }
                    None => {}
                }
                put("priority", priority.map(Value::from));
                put("max_attempts", max_attempts.map(Value::from));
                put("delay", delay.as_ref().map(Span::json));
            }
            Json::Claim { queue: q, lease, wait } => {
                put("queue", queue(q));
                put("lease", lease.as_ref().map(Span::json));
                put("wait", wait.map(Value::from));
            }
            Json::Held { error, dead, retry_in, lease, .. } => {
                put("token", claim.map(|(_, t)| t.clone().into()));
                put("error", error.clone().map(Value::from));
                put("dead", dead.map(Value::from));
                put("retry_in", retry_in.as_ref().map(Span::json));
                put("lease", lease.as_ref().map(Span::json));
            }
            Json::Bulk { state, queue: q } => {
                let states = ["dead", "done", "ready", "running", ""];
                put("state", state.map(|s| states[s as usize % states.len()].into()));
                put("queue", queue(q));
            }
        }
        Some(json!(object))
    }

    fn bytes(&self, claim: Option<&(i64, String)>, limit: usize) -> Vec<u8> {
        match self {
            Json::Empty => Vec::new(),
            Json::Raw(bytes) => bytes.clone(),
            Json::Sized(delta) => {
                // The limit itself a third of the time.
                let want = (limit as i64 + i64::from(*delta) % 3).max(0) as usize;
                let mut text = r#"{"queue": "a", "payload": ""#.to_string();
                let pad = want.saturating_sub(text.len() + 2);
                text.push_str(&"x".repeat(pad));
                text.push_str("\"}");
                text.into_bytes()
            }
            Json::Near(inner, edit) => {
                let text = inner.value(claim).map(|v| v.to_string()).unwrap_or_else(|| "{}".into());
                match edit {
                    Edit::UnknownKey => text.replacen('{', r#"{"colour": 1, "#, 1).replace(", }", "}"),
                    Edit::TrailingText => format!("{text} trailing"),
                    Edit::Truncated => text[..text.len() / 2].to_string(),
                    Edit::Array => format!("[{text}]"),
                    Edit::WrongKind => text.replacen(':', ": [", 1).replacen(',', "],", 1),
                }
                .into_bytes()
            }
            json => json.value(claim).map(|v| v.to_string().into_bytes()).unwrap_or_default(),
        }
    }
}

/// A body of an answer, checked: JSON (an object) for every answer but a
/// 204 (and HEAD's, which has none), with an `error` for a refusal.
fn check_answer(sent: &Sent, status: StatusCode, bytes: &[u8]) -> Result<serde_json::Value, String> {
    if status == StatusCode::NO_CONTENT || sent.method == Method::HEAD {
        return Ok(serde_json::Value::Null);
    }
    let what = || format!("{} {} answered {status}", sent.method, sent.uri);
    let body: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
        format!("{}: a body that is no JSON ({e}): {:?}", what(), String::from_utf8_lossy(bytes))
    })?;
    if !body.is_object() {
        return Err(format!("{}: a body that is no JSON object: {body}", what()));
    }
    if status.as_u16() >= 400 && !body["error"].is_string() {
        return Err(format!("{}: a refusal without an error: {body}", what()));
    }
    Ok(body)
}

/// What the server was set up with.
struct Expect {
    token: bool,
    limit: usize,
    keep_done: bool,
}

/// What the file held before a request, as far as the checks need.
#[derive(Default)]
struct Before {
    /// Rows in the file.
    jobs: i64,
    /// Dead jobs, of the queue the body names when it names one.
    dead: i64,
    /// The path's job is running, held with the body's token.
    holds: bool,
}

impl Before {
    fn read(conn: &rusqlite::Connection, sent: &Sent, call: &Call) -> Before {
        let count = |sql: &str, params: &[&dyn rusqlite::ToSql]| -> i64 {
            conn.query_row(sql, params, |r| r.get(0)).expect("reading the file")
        };
        let queue = match &call.body {
            Json::Bulk { queue: Some(q), .. } => Some(q.name()),
            _ => None,
        };
        let holds = match (sent.id, &sent.token) {
            (Some(id), Some(token)) => {
                let sql = "SELECT count(*) FROM ukue_jobs WHERE id = ?1 AND state = 'running' AND token = ?2";
                count(sql, &[&id, token]) > 0
            }
            _ => false,
        };
        let dead = "SELECT count(*) FROM ukue_jobs WHERE state = 'dead' AND (?1 IS NULL OR queue = ?1)";
        Before { jobs: count("SELECT count(*) FROM ukue_jobs", &[]), dead: count(dead, &[&queue]), holds }
    }
}

impl Expect {
    /// The guard that must refuse `sent`, if one must: its status.
    fn guard(&self, sent: &Sent) -> Option<&'static [u16]> {
        if sent.body.len() > self.limit {
            return Some(&[413]);
        }
        let host = sent.header(&header::HOST).unwrap_or("");
        if !self.token {
            let name = match host.strip_prefix('[') {
                Some(rest) => rest.split(']').next().unwrap_or(""),
                None => host.rsplit_once(':').map_or(host, |(n, _)| n),
            };
            if !["localhost", "127.0.0.1", "::1"].iter().any(|n| n.eq_ignore_ascii_case(name)) {
                return Some(&[403]);
            }
        }
        let safe = [Method::GET, Method::HEAD, Method::OPTIONS].contains(&sent.method);
        let site = sent.header(&header::HeaderName::from_static("sec-fetch-site"));
        let cross = match (site, sent.header(&header::ORIGIN)) {
            (Some("same-origin" | "none"), _) | (None, None) => false,
            (Some(_), _) => true,
            (None, Some(origin)) => origin.split_once("://").map_or(origin, |(_, h)| h) != host,
        };
        if !safe && cross {
            return Some(&[403]);
        }
        let authorized = !self.token
            || sent.endpoint == Endpoint::Health
            || sent.header(&header::AUTHORIZATION) == Some(&format!("Bearer {TOKEN}"));
        if sent.endpoint == Endpoint::Unknown {
            return Some(&[404]);
        }
        if !sent.endpoint.has(&sent.method) {
            return Some(if authorized { &[405] } else { &[401, 405] });
        }
        if !authorized {
            return Some(&[401]);
        }
        None
    }

    #[allow(clippy::too_many_arguments)]
    fn check(
        &self,
        sent: &Sent,
        call: &Call,
        status: StatusCode,
        body: &serde_json::Value,
        before: &Before,
        conn: &rusqlite::Connection,
        now: i64,
    ) -> Result<(), String> {
        let code = status.as_u16();
        let what = format!("{} {} answered {code} {body}", sent.method, sent.uri);
        if sent.empty_id {
            return match (400..500).contains(&code) {
                true => Ok(()),
                false => {
                    Err(format!("{what}; a path without its id is refused (http.id, http.unknown-path)"))
                }
            };
        }
        if let Some(allowed) = self.guard(sent) {
            return match allowed.contains(&code) {
                true => Ok(()),
                false => Err(format!("{what}; COMMAND.md §13 says {allowed:?}")),
            };
        }
        if !sent.endpoint.statuses().contains(&code) {
            return Err(format!("{what}; COMMAND.md §13 names {:?} for it", sent.endpoint.statuses()));
        }
        if sent.bad_id && code != 400 {
            return Err(format!("{what}; an id that is none is refused (http.id)"));
        }
        let row = |id: i64| -> Option<(String, Option<i64>, i64)> {
            conn.query_row("SELECT state, lease_until, run_at FROM ukue_jobs WHERE id = ?1", [id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .ok()
        };
        let held_path = sent.endpoint == Endpoint::Held && !sent.bad_id && sent.token.is_some();
        let well_held =
            held_path && matches!(call.body, Json::Held { .. }) && !matches!(call.verb, Verb::Head);
        match (sent.endpoint, code) {
            (Endpoint::Held, 409) if well_held && before.holds => {
                return Err(format!("{what}; the token holds the job (http.lease-lost)"));
            }
            (Endpoint::Held, 200) if !before.holds => {
                return Err(format!("{what}; the token does not hold the job (http.lease-lost)"));
            }
            (Endpoint::Jobs, 201) => {
                if let Json::Add { delay: Some(delay), .. } = &call.body {
                    if delay.ms().is_some_and(|ms| ms < 0) {
                        return Err(format!("{what}; a negative delay is refused (http.add-delay)"));
                    }
                }
            }
            (Endpoint::Claim, 200) => {
                let lease = match &call.body {
                    Json::Claim { lease: None, .. } => Some(60_000),
                    Json::Claim { lease: Some(l), .. } => l.ms(),
                    _ => None,
                };
                let id = body["id"].as_i64().unwrap_or(0);
                let until = row(id).and_then(|(_, until, _)| until);
                if let (Some(lease), Some(until)) = (lease, until) {
                    // Tenths of a second may come out a ms short as floats.
                    if (until - (now + lease)).abs() > 1 {
                        return Err(format!(
                            "{what}; lease_until {until}, not now + {lease} ms (http.claim-lease)"
                        ));
                    }
                }
            }
            _ => {}
        }
        if let (Endpoint::Held, 200, Some(id)) = (sent.endpoint, code, sent.id) {
            let after = row(id);
            if sent.uri.ends_with("/ack") {
                let want_done = self.keep_done;
                let ok = match &after {
                    None => !want_done,
                    Some((state, _, _)) => want_done && state == "done",
                };
                if !ok {
                    return Err(format!(
                        "{what}; the job is then {after:?} (keep_done {want_done}; http.ack)"
                    ));
                }
            }
            if let (true, Json::Held { retry_in: Some(r), dead: None | Some(false), .. }) =
                (sent.uri.ends_with("/fail"), &call.body)
            {
                if let (Some(ms), Some((state, _, run_at))) = (r.ms(), &after) {
                    if state == "ready" && *run_at != now + ms.max(0) {
                        return Err(format!(
                            "{what}; run_at {run_at}, not now + {} ms (http.fail)",
                            ms.max(0)
                        ));
                    }
                }
            }
        }
        if let (Endpoint::RetryAll, 200, Json::Bulk { .. }) = (sent.endpoint, code, &call.body) {
            if body["retried"].as_i64() != Some(before.dead) {
                return Err(format!(
                    "{what}; {} dead jobs were there to retry (http.retry-all)",
                    before.dead
                ));
            }
        }
        // Every time an answer gives is one as http.times writes it (a
        // whole second's `.000` too), every payload_base64 standard base64
        // with its padding (http.payload-out).
        if let Some(bad) = bad_value(body) {
            return Err(format!("{what}; {bad}"));
        }
        if let (Endpoint::Jobs, 201, Json::Add { max_attempts, .. }) = (sent.endpoint, code, &call.body) {
            if max_attempts.is_none_or(|m| m == 0) {
                let id = body["id"].as_i64().unwrap_or(0);
                let most: Option<i64> = conn
                    .query_row("SELECT max_attempts FROM ukue_jobs WHERE id = ?1", [id], |r| r.get(0))
                    .ok();
                if most.is_some_and(|m| m != 10) {
                    return Err(format!(
                        "{what}; job {id} has max_attempts {most:?}, not the default 10 (http.add-max-attempts)"
                    ));
                }
            }
        }
        if let (Endpoint::Jobs, 400, Json::Add { queue: Some(_), payload, priority, max_attempts, delay }) =
            (sent.endpoint, code, &call.body)
        {
            let valid = matches!(payload, None | Some(Payload::Text(_)))
                && priority.is_none_or(|p| (-100..=100).contains(&p))
                && max_attempts.is_none_or(|m| m >= 0)
                && matches!(delay, None | Some(Span::Seconds(0..)));
            if valid && sent.method == Method::POST && call.route_is_jobs() {
                return Err(format!("{what}; every key of the add is valid (http.add, http.add-priority)"));
            }
        }
        // A read shows the file as the requests before it left it.
        if let (Endpoint::Job, 200, Some(id), true) =
            (sent.endpoint, code, sent.id, sent.method == Method::GET)
        {
            let now_row = row(id).map(|(state, _, run_at)| match state.as_str() {
                "ready" if run_at > now => "delayed".to_string(),
                _ => state,
            });
            let shown = body["state"].as_str().map(|s| s.to_string());
            let same = match (&now_row, shown.as_deref()) {
                (Some(state), Some(shown)) => state == shown || (state == "delayed" && shown == "ready"),
                _ => false,
            };
            if !same {
                return Err(format!("{what}; the file holds it as {now_row:?} (http.show)"));
            }
        }
        if let (Endpoint::Stats, 200, true) = (sent.endpoint, code, sent.method == Method::GET) {
            let file = counts_in(conn);
            let shown = counts_shown(body);
            if file != shown {
                return Err(format!("{what}; the file's counts (ready and delayed, running and expired, dead, done) are {file:?} (http.stats)"));
            }
        }
        // HEAD's answer is GET's without its body: nothing to count.
        let listing = sent.method == Method::GET;
        if let (Endpoint::Jobs, 200, Route::Jobs { query: None }, true) =
            (sent.endpoint, code, &call.route, listing)
        {
            let listed = body["jobs"].as_array().map_or(0, Vec::len) as i64;
            if listed != before.jobs.min(100) {
                return Err(format!(
                    "{what}; {} jobs, 100 at most, were there (http.list-limit)",
                    before.jobs
                ));
            }
        }
        Ok(())
    }
}

/// The first value of `body` that no answer may give: a time that is not
/// RFC 3339 in UTC with three digits of milliseconds, a payload_base64
/// that is not standard base64 with its padding.
fn bad_value(body: &serde_json::Value) -> Option<String> {
    use base64::Engine;
    match body {
        serde_json::Value::Object(map) => map.iter().find_map(|(key, value)| match (key.as_str(), value) {
            (
                "run_at" | "lease_until" | "created_at" | "updated_at" | "oldest_due",
                serde_json::Value::String(t),
            ) if crate::shown::printed_time(t).is_none() => {
                Some(format!("{key} {t:?} is no time as http.times writes one"))
            }
            ("payload_base64", serde_json::Value::String(b))
                if base64::engine::general_purpose::STANDARD.decode(b).is_err() =>
            {
                Some(format!("payload_base64 {b:?} is not standard base64 with padding (http.payload-out)"))
            }
            _ => bad_value(value),
        }),
        serde_json::Value::Array(items) => items.iter().find_map(bad_value),
        _ => None,
    }
}

/// Per queue: (ready and delayed, running and expired, dead, done).
type Counts = std::collections::BTreeMap<String, [i64; 4]>;

fn counts_in(conn: &rusqlite::Connection) -> Counts {
    let mut counts = Counts::new();
    let mut st = conn
        .prepare("SELECT queue, sum(state = 'ready'), sum(state = 'running'), sum(state = 'dead'), sum(state = 'done') FROM ukue_jobs GROUP BY queue")
        .expect("a count of the file's jobs");
    let rows = st
        .query_map([], |r| Ok((r.get::<_, String>(0)?, [r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?])))
        .expect("counting the file's jobs");
    for row in rows.flatten() {
        counts.insert(row.0, row.1);
    }
    counts
}

fn counts_shown(stats: &serde_json::Value) -> Counts {
    let n = |q: &serde_json::Value, key: &str| q[key].as_i64().unwrap_or(-1);
    stats["queues"]
        .as_array()
        .map(|queues| {
            queues
                .iter()
                .map(|q| {
                    let counts = [
                        n(q, "ready") + n(q, "delayed"),
                        n(q, "running") + n(q, "expired"),
                        n(q, "dead"),
                        n(q, "done"),
                    ];
                    (q["queue"].as_str().unwrap_or_default().to_string(), counts)
                })
                .collect()
        })
        .unwrap_or_default()
}

impl Seen {
    fn learn(&mut self, sent: &Sent, status: StatusCode, body: &serde_json::Value) {
        match (sent.endpoint, status.as_u16()) {
            (Endpoint::Jobs, 201) => self.ids.extend(body["id"].as_i64()),
            (Endpoint::Claim, 200) => {
                if let (Some(id), Some(token)) = (body["id"].as_i64(), body["token"].as_str()) {
                    self.claims.push((id, token.to_string()));
                    self.ids.push(id);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An input of one well-formed claim, its byte `how`, on a file of
    /// `jobs` jobs (queue a's first one ready).
    fn one_claim(jobs: u8, how: u8) -> Vec<u8> {
        // Setup; Step::Well; Well::Claim; queue a; how.
        vec![0, 0, 0, jobs, 0xff, 0xff, 0xff, 0xff, 0x20, 0x20, 0x20, 0x20, 0, how]
    }

    fn fails(flaw: ServeFlaw, data: &[u8]) -> Option<String> {
        let outcome = std::panic::catch_unwind(|| serve_requests_with(flaw, data));
        outcome.err().map(|p| p.downcast_ref::<String>().cloned().unwrap_or_default())
    }

    #[test]
    fn claims_in_time_find_the_servers_that_wait_wrong_or_lose_a_left_clients_job() {
        let cases = [
            (152, "Waits(60.0)", vec![ServeFlaw::WaitUncapped]),
            (164, "Raced { after: 1, wait: 6.0 }", vec![ServeFlaw::LooksOnlyAtEnds]),
            (
                165,
                "Raced { after: 1, wait: 45.0 }",
                vec![ServeFlaw::LooksOnlyAtEnds, ServeFlaw::WaitUncapped],
            ),
            (192, "LeavesAtOnce", vec![ServeFlaw::KeepsAbandonedClaims, ServeFlaw::FinishesAbandonedClaims]),
            (
                232,
                "LeavesWaiting { after: 1 }",
                vec![ServeFlaw::KeepsAbandonedClaims, ServeFlaw::FinishesAbandonedClaims],
            ),
        ];
        for (how, time, flaws) in cases {
            let data = one_claim(2, how);
            let mut input = Unstructured::new(&data);
            let _ = Setup::arbitrary(&mut input).unwrap();
            let step = format!("{:?}", Step::arbitrary(&mut input).unwrap());
            assert!(step.contains(&format!("time: {time}")), "{how}: {step}");
            assert_eq!(fails(ServeFlaw::None, &data), None, "the reference, {time}");
            for flaw in flaws {
                let message = fails(flaw, &data).unwrap_or_else(|| panic!("{flaw:?} passes {time}"));
                assert!(message.starts_with("serve_requests: "), "{flaw:?}, {time}: {message}");
            }
        }
    }
}

//! sweep: every input that carries a value, tried at its boundaries and
//! across its classes, from tables of values ([`values`]: data, not a
//! case each). One case per input and way in, each running its whole
//! table: payloads on every way in and out ([`payloads`]), queue names,
//! priorities, attempts, durations and ids ([`args`]), format versions and
//! applications' databases ([`files`]).

mod args;
mod defaults;
mod files;
mod payloads;
mod queue_classes;
mod times;
mod values;

use std::path::Path;
use std::process::Output;

use crate::cases::{Case, CaseResult, Level, Needs};
use crate::subjects::observe::file::write;
use crate::subjects::Failure;

use super::common;

pub fn cases() -> Vec<Case> {
    let case =
        |id, rule, summary, run| Case { id, rule, summary, needs: Needs::default(), level: Level::Must, run };
    let serve = Needs { serve: true, ..Needs::default() };
    vec![
        case(
            "sweep/payload-argument",
            "add.payload-argument",
            "payloads of 0 B to 128 KiB, invalid and odd UTF-8, as add's argument, are stored byte for byte",
            payloads::argument,
        ),
        case(
            "sweep/payload-stdin",
            "add.payload-stdin",
            "payloads of 0 B to 1 MiB + 1, every byte value, invalid and odd UTF-8, on add's stdin (`-` and left out), are stored byte for byte",
            payloads::stdin,
        ),
        case(
            "sweep/payload-json",
            "json.payload",
            "every payload of the sweep and each byte alone come out of list --json and show --json as their text, or standard base64 with padding",
            payloads::json,
        ),
        case(
            "sweep/work-stdin",
            "work.stdin",
            "every payload of the sweep (0 B to 1 MiB + 1, every byte value) reaches work's command on stdin, every byte, then its end",
            payloads::work_stdin,
        ),
        Case {
            needs: serve,
            ..case(
                "sweep/payload-http",
                "5.3",
                "every payload of the sweep, added over HTTP as payload_base64 (and as payload when text), is stored byte for byte and comes out of GET /v1/jobs/{id} and a claim",
                payloads::http,
            )
        },
        case(
            "sweep/json-valid",
            "json.valid",
            "queue names, payloads and errors with control characters, quotes, backslashes, U+2028 and 4-byte characters: list, show and stats --json print one valid JSON value each",
            args::json_valid,
        ),
        case(
            "sweep/queue-names",
            "args.queue",
            "queue names of 1 and 200 characters of 1 to 4 bytes each (combining ones too) are taken as given by add and work; 0 or 201 are refused before anything is added or claimed",
            args::queue_names,
        ),
        Case {
            needs: serve,
            ..case(
                "sweep/queue-names-http",
                "args.queue",
                "over HTTP, queue names of 200 characters of 1 to 4 bytes are taken as given; 201 characters, none, or a NUL are refused with a 4xx",
                args::queue_names_http,
            )
        },
        case(
            "sweep/priority",
            "add.priority-range",
            "--priority -100 to 100 (and +5, 05, -0) is stored; -101, 101, 2^63-1 are refused; 5.0, x, 2^63 and empty are usage errors",
            args::priority,
        ),
        case(
            "sweep/attempts",
            "add.attempts",
            "--attempts 1 to 2^63-1 (and +3, 07) is stored; -1 is refused; 0 is the default or refused; 1.0, ten, 2^63 and empty are usage errors",
            args::attempts,
        ),
        case(
            "sweep/delay",
            "args.duration",
            "--delay in Go's syntax (0, 1ns, 1us, 1µs, 500ms, 1.5s, .5s, 1m30s, 2h, 1h30m, +5s, 87600h…) makes run_at the add plus it; negative ones are refused; 5, soon, 1x, empty… are usage errors; centuries are taken exactly or refused",
            args::delay,
        ),
        Case {
            level: Level::Should,
            ..case(
                "sweep/delay-go-range",
                "args.duration-range",
                "--delay 2562047h, the longest Go duration, is taken; 2562048h is a usage error, as the published command does",
                args::delay_go_range,
            )
        },
        case(
            "sweep/work-durations",
            "args.duration",
            "--lease, --timeout, --poll and --grace take Go's syntax (the lease shows in lease_until); 5, soon, 1x, empty are usage errors and -1s is refused, before anything is claimed",
            args::work_durations,
        ),
        case(
            "sweep/ids",
            "args.id",
            "show, retry and delete read 1, 007, +2 and 2^63-1 as numbers (the last of no job); -1 (after --) and 0 name no job either, job 1 beside them (an error that changes nothing); 2^63, 1.0, 0x1, abc, ' 1' and empty are usage errors",
            args::ids,
        ),
        case(
            "sweep/at",
            "add.at",
            "--at with Z and numeric offsets of each sign (+02:00, -05:30, ±00:00, +14:00, -12:00), fractions of 1 to 9 digits, across a day and a leap day: run_at is that instant to the millisecond; a time past (before 1970 too) is due at once, as stats and list read it; no offset, 24:00, 29 February 2100… are usage errors",
            times::at,
        ),
        Case {
            needs: serve,
            ..case(
                "sweep/at-http",
                "http.add-run-at",
                "an add's run_at over HTTP, each time of sweep/at's table: that instant to the millisecond, a time past due at once (a claim takes it, and a fail for good leaves its run_at alone), a time that is not RFC 3339 refused with a 4xx",
                times::at_http,
            )
        },
        case(
            "sweep/json-times",
            "json.times",
            "every time of list --json and show --json (run_at, lease_until, created_at, updated_at) and stats --json's oldest_due, at whole seconds (.000), minutes and days, each fraction, year 9999: RFC 3339 in UTC with three digits of milliseconds, the row's instant",
            times::json_times,
        ),
        Case {
            needs: serve,
            ..case(
                "sweep/json-times-http",
                "http.times",
                "the same times through GET /v1/jobs, GET /v1/jobs/{id}, GET /v1/stats and a claimed job's created_at",
                times::json_times_http,
            )
        },
        case(
            "sweep/queue-classes",
            "add.queue",
            "queue names with spaces around, capitals, NFC and NFD forms, ligatures, fullwidth letters, zero-width spaces, LIKE wildcards, each beside the name a trim, case fold or normalization makes of it: stored, listed, counted and worked as given",
            queue_classes::cli,
        ),
        Case {
            needs: serve,
            ..case(
                "sweep/queue-classes-http",
                "http.add-queue",
                "over HTTP, the same names and their twins: stored, listed (GET /v1/jobs?queue=), counted and claimed as given",
                queue_classes::http,
            )
        },
        Case {
            needs: Needs { slow: true, ..Needs::default() },
            ..case(
                "sweep/work-defaults",
                "work.timeout",
                "work without --timeout lets a command run 55 s and finishes its job; work without --grace, after SIGTERM, lets its command run on for about 30 s, then stops it and gives its job back",
                defaults::work,
            )
        },
        Case {
            needs: serve,
            ..case(
                "sweep/serve-defaults",
                "serve.addr",
                "serve without --addr answers on 127.0.0.1:7660 (a job added there lands in its file); a claim without wait of an empty queue answers 204 at once",
                defaults::serve,
            )
        },
        case(
            "sweep/format-versions",
            "file.newer-version",
            "format_version 0, 2, 3, 10, 2^31, 2^63-1, 2^63, -1, 1.0, ' 1', '1 ', 1abc, abc, empty, NULL, a BLOB '2', none (with '1' under a later key)…: every command refuses the file and leaves it byte for byte",
            files::format_versions,
        ),
        case(
            "sweep/app-databases",
            "file.add-tables",
            "init and add on an application's database in each journal mode, page size (512 to 65536) and text encoding add the tables, switch it to WAL, and keep its tables, rows, application_id, page size and encoding",
            files::app_databases,
        ),
    ]
}

/// `out` of the command `shown` must have succeeded.
fn expect_success(out: &Output, shown: &str) -> CaseResult {
    match out.status.code() {
        Some(0) => Ok(()),
        Some(_) => Err(Failure::fail(format!("{shown} to succeed"), common::outcome(out))),
        None => Err(Failure::error(
            format!("{shown} to succeed"),
            format!("it crashed: {}", common::outcome(out)),
        )),
    }
}

/// Writes each payload as a job of queue `queue` behind the subject's back
/// (the format is the contract: any program may add jobs with SQL), in one
/// transaction; their ids, in order.
fn insert(file: &Path, queue: &str, payloads: &[&[u8]]) -> Result<Vec<i64>, Failure> {
    let mut conn = write(file)?;
    let tx = conn.transaction()?;
    let mut ids = Vec::new();
    {
        let mut st = tx.prepare("INSERT INTO ukue_jobs (queue, payload) VALUES (?1, ?2)")?;
        for payload in payloads {
            st.execute(rusqlite::params![queue, payload])?;
            ids.push(tx.last_insert_rowid());
        }
    }
    tx.commit()?;
    Ok(ids)
}

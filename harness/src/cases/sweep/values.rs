//! The sweeps' tables: every value an input is tried at, with what a
//! program must make of it. Data only; the cases that run them are in
//! [`super::payloads`], [`super::args`] and [`super::files`].

/// A page, and the buffer of a Linux pipe.
const PAGE: usize = 4096;
const PIPE: usize = 65536;
const MIB: usize = 1 << 20;

/// The longest argument Linux passes to a program (MAX_ARG_STRLEN, 32
/// pages, less the argument's terminating NUL).
pub const LONGEST_ARGUMENT: usize = 32 * PAGE - 1;

/// How a payload's bytes are made.
#[derive(Debug, Clone, Copy)]
pub enum Bytes {
    /// These bytes.
    Exactly(&'static [u8]),
    /// Every byte value once, 0 to 255.
    AllValues,
    /// N bytes of printable ASCII, spaces and newlines (seeded).
    Text(usize),
    /// N bytes of any value, NUL among them (seeded).
    Binary(usize),
}

/// The ways in and out a payload is tried besides `list --json` (which
/// shows every payload) and the HTTP API (which takes every payload that
/// goes any other way): a set of these bits. Each way takes the classes
/// its bugs live in, so that every command started is worth its cost.
pub type Ways = u8;
/// The argument of `add` (where an argument can hold it).
pub const ARG: Ways = 1;
/// The stdin of `add`.
pub const STDIN: Ways = 2;
/// The stdin of `work`'s command.
pub const WORK: Ways = 4;
/// `show --json`.
pub const SHOW: Ways = 8;
/// `list --json` alone.
const LISTED: Ways = 0;

/// A payload of the sweep.
#[derive(Debug, Clone, Copy)]
pub struct Payload {
    pub name: &'static str,
    pub bytes: Bytes,
    pub ways: Ways,
}

const fn p(name: &'static str, bytes: &'static [u8], ways: Ways) -> Payload {
    Payload { name, bytes: Bytes::Exactly(bytes), ways }
}

const fn text(name: &'static str, n: usize, ways: Ways) -> Payload {
    Payload { name, bytes: Bytes::Text(n), ways }
}

const fn binary(name: &'static str, n: usize) -> Payload {
    Payload { name, bytes: Bytes::Binary(n), ways: STDIN | WORK }
}

/// Every way.
const ALL: Ways = ARG | STDIN | WORK | SHOW;

/// Every payload: its sizes (around a page, a pipe's buffer, the longest
/// argument and a mebibyte), every byte value, UTF-8 that is not valid,
/// and valid UTF-8 that JSON and terminals treat specially.
pub const PAYLOADS: &[Payload] = &[
    // Sizes: pages and pipes matter to stdin, the longest argument to argv.
    p("empty", b"", ALL),
    text("1-byte", 1, ALL),
    text("page-1", PAGE - 1, STDIN | WORK),
    text("page", PAGE, STDIN | WORK),
    text("page+1", PAGE + 1, STDIN | WORK),
    text("pipe-1", PIPE - 1, STDIN | WORK),
    text("pipe", PIPE, STDIN | WORK),
    text("pipe+1", PIPE + 1, STDIN | WORK),
    text("longest-argument", LONGEST_ARGUMENT, ARG | STDIN | WORK),
    text("1-MiB", MIB, STDIN | WORK),
    text("1-MiB+1", MIB + 1, STDIN | WORK | SHOW),
    binary("binary-page+1", PAGE + 1),
    binary("binary-pipe+1", PIPE + 1),
    Payload { name: "binary-1-MiB+1", bytes: Bytes::Binary(MIB + 1), ways: STDIN | WORK | SHOW },
    // Byte values; what a trim or a line reader would lose.
    Payload { name: "bytes-0-to-255", bytes: Bytes::AllValues, ways: STDIN | WORK | SHOW },
    p("nul", b"\0", STDIN | WORK),
    p("nul-inside", b"a\0b", STDIN | WORK | SHOW),
    p("newline", b"\n", ARG | STDIN),
    p("crlf", b"\r\n", ARG | STDIN),
    p("trailing-newline", b"line\n", ARG | STDIN),
    p("leading-newline", b"\nline", ARG | STDIN),
    p("spaces-around", b"  padded  ", ARG | STDIN),
    p("tab", b"\t", ARG | STDIN),
    p("dash", b"-", STDIN),
    p("dash-word", b"-x", ARG),
    p("double-dash", b"--", ARG),
    p("byte-7f", b"\x7f", LISTED),
    p("byte-ff", b"\xff", LISTED),
    // UTF-8 that is not valid: each alone (a validator must see it), and
    // all of them in one payload for the ways that would mangle any.
    p(
        "invalid-utf8-all",
        b"\x80|a\xbfb|\xc3|\xe2\x82|\xf0\x9f\x98|\xc0\xaf|\xc0\x80|\xe0\x80\xaf|\xed\xa0\x80|\xed\xbf\xbf|\xf4\x90\x80\x80|\xfe|\xff",
        ARG | STDIN | WORK | SHOW,
    ),
    p("lone-continuation", b"\x80", LISTED),
    p("lone-continuation-bf", b"a\xbfb", LISTED),
    p("truncated-2-byte", b"\xc3", LISTED),
    p("truncated-3-byte", b"\xe2\x82", LISTED),
    p("truncated-4-byte", b"x\xf0\x9f\x98", LISTED),
    p("overlong-slash", b"\xc0\xaf", LISTED),
    p("overlong-nul", b"\xc0\x80", SHOW),
    p("overlong-3-byte", b"\xe0\x80\xaf", LISTED),
    p("surrogate-high", b"\xed\xa0\x80", SHOW),
    p("surrogate-low", b"\xed\xbf\xbf", LISTED),
    p("surrogate-pair-cesu", b"\xed\xa0\xbd\xed\xb8\x80", LISTED),
    p("beyond-10ffff", b"\xf4\x90\x80\x80", LISTED),
    p("byte-fe", b"\xfe", LISTED),
    p("utf16-bom", b"\xff\xfeh\0i\0", LISTED),
    p("latin1", b"caf\xe9", LISTED),
    // Valid UTF-8 that is special somewhere.
    p("latin-and-emoji", "caf\u{e9} \u{1f600}".as_bytes(), LISTED),
    p("line-separator", "a\u{2028}b\u{2029}c".as_bytes(), ARG | STDIN | SHOW),
    p("bom", "\u{feff}starts with a BOM".as_bytes(), SHOW),
    p("4-byte", "\u{1f600}\u{10348}\u{10ffff}".as_bytes(), ARG | STDIN),
    p("noncharacters", "\u{fffe}\u{ffff}\u{fffd}".as_bytes(), LISTED),
    p("control-characters", b"\x01\x07\x08\x0b\x0c\x1b[31mred\x1b[0m\x1f", ARG | STDIN | SHOW),
    p("c1-controls", "\u{80}\u{85}\u{9f}".as_bytes(), LISTED),
    p("quotes-backslashes", br#""quoted" 'single' \ \\ \" \u0041 \n"#, ARG | STDIN | SHOW),
    p("json-lookalike", br#"{"queue": "x", "payload": [1, 2]}"#, LISTED),
    p("html", b"</script><!--&amp;", LISTED),
    p("combining", "e\u{301}\u{302}".as_bytes(), LISTED),
];

/// A queue name of the sweep, and whether the format takes it.
#[derive(Debug, Clone, Copy)]
pub struct QueueName {
    pub name: &'static str,
    /// The character repeated, and how many times.
    pub unit: &'static str,
    pub count: usize,
    pub accepted: bool,
}

const fn queue(name: &'static str, unit: &'static str, count: usize, accepted: bool) -> QueueName {
    QueueName { name, unit, count, accepted }
}

impl QueueName {
    pub fn text(&self) -> String {
        self.unit.repeat(self.count)
    }
    pub fn chars(&self) -> usize {
        self.unit.chars().count() * self.count
    }
}

/// Queue names of 1 to 200 characters are taken, whatever their bytes
/// (200 four-byte characters are 800 bytes); 201 are not, nor none. A
/// letter with a combining accent is two characters (code points).
pub const QUEUE_NAMES: &[QueueName] = &[
    queue("1-ascii", "q", 1, true),
    queue("1-4-byte", "\u{1f600}", 1, true),
    queue("200-ascii", "a", 200, true),
    queue("200-2-byte", "\u{e9}", 200, true),
    queue("200-3-byte", "\u{20ac}", 200, true),
    queue("200-4-byte", "\u{1f600}", 200, true),
    queue("200-combining", "e\u{301}", 100, true),
    queue("200-mixed", "a\u{e9}\u{20ac}\u{1f600}", 50, true),
    queue("empty", "", 0, false),
    queue("201-ascii", "a", 201, false),
    queue("201-2-byte", "\u{e9}", 201, false),
    queue("201-4-byte", "\u{1f600}", 201, false),
    queue("201-combining", "e\u{301}\u{302}", 67, false),
];

/// What a program must make of a value of a flag or an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// Taken, as this number.
    Value(i64),
    /// Taken as the default, or refused (COMMAND.md lets a program choose).
    DefaultOrRefused(i64),
    /// Refused with an error or a usage error: out of range.
    Refused,
    /// A usage error (exit status 2): not a value of the flag's kind.
    Usage,
}

/// `--priority` values: -100 to 100 are taken, anything else refused;
/// decimal forms with a sign or a leading zero are numbers like others.
pub const PRIORITIES: &[(&str, Want)] = &[
    ("-101", Want::Refused),
    ("-100", Want::Value(-100)),
    ("-1", Want::Value(-1)),
    ("0", Want::Value(0)),
    ("1", Want::Value(1)),
    ("100", Want::Value(100)),
    ("101", Want::Refused),
    ("+5", Want::Value(5)),
    ("05", Want::Value(5)),
    ("-0", Want::Value(0)),
    ("9223372036854775807", Want::Refused),
    ("5.0", Want::Usage),
    ("x", Want::Usage),
    ("5x", Want::Usage),
    ("", Want::Usage),
    ("9223372036854775808", Want::Usage),
];

/// `--attempts` values: 1 and more up to the largest 64-bit integer (Go's
/// int, and the column's `CHECK (max_attempts >= 1)`); 0 is the default
/// in the published command, or refused.
pub const ATTEMPTS: &[(&str, Want)] = &[
    ("-1", Want::Refused),
    ("0", Want::DefaultOrRefused(10)),
    ("1", Want::Value(1)),
    ("2", Want::Value(2)),
    ("10", Want::Value(10)),
    ("+3", Want::Value(3)),
    ("07", Want::Value(7)),
    ("2147483647", Want::Value(2_147_483_647)),
    ("2147483648", Want::Value(2_147_483_648)),
    ("4294967296", Want::Value(4_294_967_296)),
    ("9223372036854775807", Want::Value(i64::MAX)),
    ("9223372036854775808", Want::Usage),
    ("1.0", Want::Usage),
    ("ten", Want::Usage),
    ("", Want::Usage),
];

/// A duration in Go's syntax and its length in nanoseconds (below zero
/// for a negative one); None: not a duration, a usage error.
#[derive(Debug, Clone, Copy)]
pub struct Duration {
    pub text: &'static str,
    pub nanos: Option<i64>,
}

const fn d(text: &'static str, nanos: i64) -> Duration {
    Duration { text, nanos: Some(nanos) }
}

const fn bad(text: &'static str) -> Duration {
    Duration { text, nanos: None }
}

const US: i64 = 1_000;
const MS: i64 = 1_000_000;
const S: i64 = 1_000_000_000;

/// Go's time.ParseDuration: decimal numbers, each with a unit, an
/// optional sign in front; `0` alone needs none.
pub const DURATIONS: &[Duration] = &[
    d("0", 0),
    d("1ns", 1),
    d("1us", US),
    d("1\u{b5}s", US),
    d("1\u{3bc}s", US),
    d("999999ns", 999_999),
    d("500ms", 500 * MS),
    d("1.5s", 1_500 * MS),
    d(".5s", 500 * MS),
    d("1.s", S),
    d("2.75ms", 2_750 * US),
    d("1m30s", 90 * S),
    d("1m30.25s", 90_250 * MS),
    d("2h", 7_200 * S),
    d("1h30m", 5_400 * S),
    d("1.5h", 5_400 * S),
    d("1h0m0.001s", 3_600 * S + MS),
    d("+5s", 5 * S),
    d("+0", 0),
    d("87600h", 87_600 * 3_600 * S),
    d("0s", 0),
    d("0.000s", 0),
    d("-1s", -S),
    d("-1ms", -MS),
    bad("5"),
    bad("soon"),
    bad(""),
    bad("1x"),
    bad("1S"),
    bad("1 s"),
    bad(" 1s"),
    bad("s"),
    bad(".s"),
    bad("1..5s"),
    bad("1h-5m"),
    bad("1e3ms"),
    bad("0x10s"),
];

/// Delays of centuries, in milliseconds: more than a program in every
/// language must hold, so each is taken exactly or refused (an error or a
/// usage error), never taken as another length. Go's limit, 2^63 − 1 ns,
/// lies between the first two: where the published command draws it is
/// [`GO_LIMIT`], a `should`.
pub const LONG_DELAYS: &[(&str, i64)] = &[
    ("2562047h", 2_562_047 * 3_600_000),
    ("2562048h", 2_562_048 * 3_600_000),
    ("100000000h", 100_000_000 * 3_600_000),
];

/// The most a Go duration holds (its milliseconds), and the least past it:
/// the published command takes the first and refuses the second with a
/// usage error.
pub const GO_LIMIT: (&str, i64, &str) = ("2562047h", 2_562_047 * 3_600_000, "2562048h");

/// An id for `show`, `retry` and `delete`: a whole decimal number (with a
/// sign or leading zeros, as Go's strconv.ParseInt and Rust's i64 read
/// it) of 64 bits; anything else is a usage error. -1 and 0 name no job,
/// and come first, while job 1 is there to be mistaken for -1.
pub const IDS: &[(&str, Want)] = &[
    ("-1", Want::Value(-1)),
    ("0", Want::Value(0)),
    ("1", Want::Value(1)),
    ("007", Want::Value(7)),
    ("+2", Want::Value(2)),
    ("9223372036854775807", Want::Value(i64::MAX)),
    ("9223372036854775808", Want::Usage),
    ("99999999999999999999", Want::Usage),
    ("1.0", Want::Usage),
    ("1e3", Want::Usage),
    ("0x1", Want::Usage),
    ("abc", Want::Usage),
    ("", Want::Usage),
    (" 1", Want::Usage),
];

/// 2100-01-01T00:00:00Z, in milliseconds: a time ahead of every run, so
/// that the table's times are stored exactly as given.
pub const Y2100: i64 = 4_102_444_800_000;
const HOUR: i64 = 3_600_000;
const MINUTE: i64 = 60_000;

/// What `add --at TIME` (and `run_at` over HTTP) must make of a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    /// This instant, in ms; a fraction past the millisecond may be cut or
    /// rounded up (`ms` or `ms + 1`).
    Exactly(i64),
    /// A time in the past: due at once (stored as given, or as the add's
    /// time: COMMAND.md allows both).
    Past,
    /// Not an RFC 3339 time: a usage error (over HTTP a refusal).
    Bad,
}

/// `--at` by class: `Z` and numeric offsets of each sign (the offset is
/// taken off the local time: `+02:00` is two hours *earlier* in UTC),
/// with minutes, zero (`+00:00`, `-00:00`), the largest (`±14:00`,
/// `-12:00`), across a day and a year; fractions of 1 to 9 digits, zero
/// among them; a leap day and a day that is not one; times before 1970,
/// whose milliseconds are below 0 (stored as such: `abs(:run_at)` would
/// put 1900 in 2040). Go's time.Parse with time.RFC3339 is the published
/// command's reader.
pub const AT_TIMES: &[(&str, At)] = &[
    ("2100-01-01T00:00:00Z", At::Exactly(Y2100)),
    ("2100-01-01T00:00:00.000Z", At::Exactly(Y2100)),
    ("2100-01-01T00:00:00.250Z", At::Exactly(Y2100 + 250)),
    ("2100-01-01T00:00:00.5Z", At::Exactly(Y2100 + 500)),
    ("2100-01-01T00:00:00.999Z", At::Exactly(Y2100 + 999)),
    ("2100-01-01T00:00:00.001Z", At::Exactly(Y2100 + 1)),
    ("2100-01-01T00:00:00.123456789Z", At::Exactly(Y2100 + 123)),
    ("2100-01-01T02:00:00+02:00", At::Exactly(Y2100)),
    ("2100-01-01T11:00:00+02:00", At::Exactly(Y2100 + 9 * HOUR)),
    ("2099-12-31T18:30:00-05:30", At::Exactly(Y2100)),
    ("2100-01-01T09:00:00-05:30", At::Exactly(Y2100 + 14 * HOUR + 30 * MINUTE)),
    ("2100-01-01T05:45:00+05:45", At::Exactly(Y2100)),
    ("2100-01-01T14:00:00+14:00", At::Exactly(Y2100)),
    ("2100-01-01T00:00:00+14:00", At::Exactly(Y2100 - 14 * HOUR)),
    ("2099-12-31T12:00:00-12:00", At::Exactly(Y2100)),
    ("2100-01-01T00:00:00+00:00", At::Exactly(Y2100)),
    ("2100-01-01T00:00:00-00:00", At::Exactly(Y2100)),
    ("2100-01-01T01:30:00.125+01:30", At::Exactly(Y2100 + 125)),
    ("2099-12-31T23:00:00.000-01:00", At::Exactly(Y2100)),
    ("2096-02-29T12:00:00Z", At::Exactly(3_981_355_200_000)),
    ("2038-01-19T03:14:08Z", At::Exactly(2_147_483_648_000)),
    ("2000-01-01T00:00:00Z", At::Past),
    ("2000-01-01T02:00:00+02:00", At::Past),
    ("1999-12-31T19:00:00.500-05:00", At::Past),
    ("1969-12-31T23:59:59.999Z", At::Past),
    ("1900-01-01T00:00:00Z", At::Past),
    ("2100-01-01T00:00:00", At::Bad),
    ("2100-01-01", At::Bad),
    ("2100-01-01T00:00Z", At::Bad),
    ("2100-01-01T00:00:00+02", At::Bad),
    ("2100-01-01T00:00:00+0200", At::Bad),
    ("2100-01-01T00:00:00.Z", At::Bad),
    ("2100-02-29T00:00:00Z", At::Bad),
    ("2100-01-32T00:00:00Z", At::Bad),
    ("2100-01-01T24:00:00Z", At::Bad),
    ("2100-01-01T00:60:00Z", At::Bad),
    ("4102444800", At::Bad),
];

/// A queue name of a class that a program might read as another name, and
/// that other name (its twin): both are queues of their own, each stored,
/// listed, counted and claimed exactly as given.
#[derive(Debug, Clone, Copy)]
pub struct QueueClass {
    pub class: &'static str,
    pub name: &'static str,
    pub twin: &'static str,
    /// Whether `work` is run on it too (a worker costs a process).
    pub worked: bool,
}

const fn class(class: &'static str, name: &'static str, twin: &'static str, worked: bool) -> QueueClass {
    QueueClass { class, name, twin, worked }
}

/// Leading and trailing whitespace (trimmed), case (folded), Unicode
/// normalization (NFC, NFD, NFKC), invisible characters, and SQL LIKE's
/// wildcards (a name matched with LIKE takes its twin's jobs).
pub const QUEUE_CLASSES: &[QueueClass] = &[
    class("spaces-around", " mail ", "mail", true),
    class("leading-space", " mail", "mail", false),
    class("trailing-space", "mail ", "mail", false),
    class("trailing-newline", "mail\n", "mail", false),
    class("tab", "\tmail", "mail", false),
    class("capital", "Mail", "mail", true),
    class("capitals", "MAIL", "mail", false),
    class("dotted-capital-i", "\u{130}", "i\u{307}", false),
    class("nfd", "cafe\u{301}", "caf\u{e9}", true),
    class("nfc", "caf\u{e9}", "cafe\u{301}", true),
    class("hangul-jamo", "\u{1100}\u{1161}", "\u{ac00}", false),
    class("ligature", "\u{fb01}le", "file", false),
    class("fullwidth", "\u{ff2d}ail", "Mail", false),
    class("zero-width-space", "ma\u{200b}il", "mail", false),
    class("like-underscore", "m_il", "mail", true),
    class("like-percent", "m%", "mail", false),
];

/// A time as JSON shows it (COMMAND.md `json.times`), by class: a whole
/// second (no fraction left to print but `.000`), a whole minute, hour and
/// day, each one-digit, two-digit and three-digit fraction, the end of a
/// leap day, past 2^31 seconds, and the last millisecond of year 9999.
pub const JSON_TIMES: &[(&str, i64)] = &[
    ("whole-second", 1_000_000_000_000),
    ("whole-day", Y2100),
    ("whole-minute", Y2100 - 2 * MINUTE),
    ("fraction-001", Y2100 + 1),
    ("fraction-010", Y2100 + 10),
    ("fraction-100", Y2100 + 100),
    ("fraction-999", Y2100 + 999),
    ("leap-day-end", 951_868_799_999),
    ("past-2^31-seconds", 2_147_483_648_000),
    ("year-9999", 253_402_300_799_999),
];

/// A default of the command or of the API: the COMMAND.md item that names
/// it, the flag or key, its published value, and the case that checks the
/// value (not only that something is taken when it is left out). The
/// table is the list a test holds to the cases (each named case exists);
/// the cases themselves say how they see each value.
#[cfg(test)]
#[derive(Debug, Clone, Copy)]
pub struct DefaultValue {
    pub item: &'static str,
    pub flag: &'static str,
    pub value: &'static str,
    pub case: &'static str,
}

#[cfg(test)]
const fn default(
    item: &'static str,
    flag: &'static str,
    value: &'static str,
    case: &'static str,
) -> DefaultValue {
    DefaultValue { item, flag, value, case }
}

/// Every default of COMMAND.md, each checked as a value.
#[cfg(test)]
pub const DEFAULTS: &[DefaultValue] = &[
    default("add.attempts-default", "add --attempts", "10", "steps/add-stored"),
    default("add.priority", "add --priority", "0", "steps/add-stored"),
    default("add.delay", "add --delay", "0: due at once", "steps/add-stored"),
    default("work.concurrency", "work --concurrency", "1", "cli/work-concurrency"),
    default("work.lease", "work --lease", "1m", "cli/work-lease"),
    default(
        "work.timeout",
        "work --timeout",
        "0: no limit (a command runs past 50 s)",
        "sweep/work-defaults",
    ),
    default("work.poll", "work --poll", "1s", "cli/work-poll"),
    default("work.stop", "work --grace", "30s", "sweep/work-defaults"),
    default("list.limit", "list --limit", "50", "cli/list-limit"),
    default("serve.addr", "serve --addr", "127.0.0.1:7660", "sweep/serve-defaults"),
    default("serve.max-body", "serve --max-body", "1048576", "http/body-exact"),
    default("http.claim-lease", "POST /v1/claim lease", "60 s", "http/claim-options"),
    default("http.extend", "POST /v1/jobs/{id}/extend lease", "60 s", "http/claim-options"),
    default("http.claim-wait", "POST /v1/claim wait", "0: answered at once", "sweep/serve-defaults"),
    default("http.add-max-attempts", "POST /v1/jobs max_attempts", "10", "http/add-options"),
    default("http.add-priority", "POST /v1/jobs priority", "0", "http/add-options"),
    default("http.add-delay", "POST /v1/jobs delay", "0: due at once", "http/add-options"),
    default("http.list-limit", "GET /v1/jobs limit", "100", "http/list-filters"),
    default("http.fail", "POST /v1/jobs/{id}/fail error", "failed", "http/fail-options"),
];

/// A `format_version` a file may hold, and how it is stored.
#[derive(Debug, Clone, Copy)]
pub enum Stored {
    Text(&'static str),
    Blob(&'static [u8]),
    Null,
    /// No `format_version` row, and `1` under a key that sorts after it:
    /// a reader must look for that key, not the first one from it on.
    Missing,
}

impl Stored {
    /// The value as SQL would write it: `'2'`, `X'32'`, `NULL`.
    pub fn sql(&self) -> String {
        match self {
            Stored::Text(text) => format!("'{}'", text.replace('\'', "''")),
            Stored::Blob(bytes) => {
                format!("X'{}'", bytes.iter().map(|b| format!("{b:02X}")).collect::<String>())
            }
            Stored::Null => "NULL".into(),
            Stored::Missing => "no row (a key `version` holds '1')".into(),
        }
    }
}

/// Every format_version here is refused by every command: newer than 1
/// (up to the largest 64-bit integer and past it), below 1, or no whole
/// number as Go's strconv.Atoi reads one (a sign and decimal digits,
/// nothing around them). `01` and `+1` are version 1 to the published
/// command, so a program need not refuse them, and they are not here.
pub const VERSIONS: &[(&str, Stored)] = &[
    ("0", Stored::Text("0")),
    ("2", Stored::Text("2")),
    ("3", Stored::Text("3")),
    ("10", Stored::Text("10")),
    ("2^31", Stored::Text("2147483648")),
    ("2^63-1", Stored::Text("9223372036854775807")),
    ("2^63", Stored::Text("9223372036854775808")),
    ("2^64+1", Stored::Text("18446744073709551617")),
    ("-1", Stored::Text("-1")),
    ("-0", Stored::Text("-0")),
    ("1.0", Stored::Text("1.0")),
    ("1e0", Stored::Text("1e0")),
    ("space-1", Stored::Text(" 1")),
    ("1-space", Stored::Text("1 ")),
    ("1-newline", Stored::Text("1\n")),
    ("1abc", Stored::Text("1abc")),
    ("2abc", Stored::Text("2abc")),
    ("0x1", Stored::Text("0x1")),
    ("fullwidth-1", Stored::Text("\u{ff11}")),
    ("abc", Stored::Text("abc")),
    ("empty", Stored::Text("")),
    ("null", Stored::Null),
    ("blob-2", Stored::Blob(b"2")),
    ("missing", Stored::Missing),
];

/// An application's database: its journal mode, page size and text
/// encoding.
#[derive(Debug, Clone, Copy)]
pub struct AppDatabase {
    pub journal: &'static str,
    pub page_size: u32,
    pub encoding: &'static str,
}

const fn app(journal: &'static str, page_size: u32, encoding: &'static str) -> AppDatabase {
    AppDatabase { journal, page_size, encoding }
}

/// Each journal mode that a file keeps (WAL in its header; DELETE,
/// TRUNCATE and PERSIST by what they leave beside it; OFF leaves nothing),
/// each page size, each text encoding: each value at least twice, with
/// others of the other two.
pub const APP_DATABASES: &[AppDatabase] = &[
    app("delete", 512, "UTF-8"),
    app("truncate", 1024, "UTF-8"),
    app("persist", 4096, "UTF-16le"),
    app("wal", 8192, "UTF-8"),
    app("off", 65536, "UTF-16be"),
    app("delete", 65536, "UTF-16le"),
    app("wal", 512, "UTF-16be"),
    app("persist", 8192, "UTF-8"),
    app("truncate", 4096, "UTF-16be"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_name_is_accepted_when_it_has_1_to_200_characters() {
        for q in QUEUE_NAMES {
            assert_eq!(q.text().chars().count(), q.chars(), "{}", q.name);
            assert_eq!(q.accepted, (1..=200).contains(&q.chars()), "{}", q.name);
        }
    }

    /// The table says what Go's time.ParseDuration reads; the reference
    /// reads each the same (a negative one it refuses).
    #[test]
    fn the_reference_reads_each_duration_as_the_table_says() {
        for d in DURATIONS {
            let parsed = ukue::cli::duration::parse(d.text);
            match d.nanos {
                Some(n) if n >= 0 => {
                    assert_eq!(parsed, Ok(std::time::Duration::from_nanos(n as u64)), "{:?}", d.text)
                }
                _ => assert!(parsed.is_err(), "{:?} read as {parsed:?}", d.text),
            }
        }
    }

    #[test]
    fn names_are_unique_and_every_way_has_payloads() {
        let mut names: Vec<&str> = PAYLOADS.iter().map(|p| p.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PAYLOADS.len(), "a payload name twice");
        for way in [ARG, STDIN, WORK, SHOW] {
            assert!(PAYLOADS.iter().filter(|p| p.ways & way != 0).count() >= 8, "way {way}");
        }
        let mut versions: Vec<&str> = VERSIONS.iter().map(|(name, _)| *name).collect();
        versions.sort_unstable();
        versions.dedup();
        assert_eq!(versions.len(), VERSIONS.len(), "a version name twice");
    }

    /// Each default names a COMMAND.md item and a case of the suite.
    #[test]
    fn every_default_is_checked_by_a_case() {
        let cases: Vec<&str> = crate::cases::all().iter().map(|c| c.id).collect();
        for d in DEFAULTS {
            assert!(crate::spec::title(d.item).is_some(), "{}: COMMAND.md has no item {}", d.flag, d.item);
            assert!(!d.value.is_empty(), "{}: its value", d.flag);
            assert!(cases.contains(&d.case), "{}: no case {}", d.flag, d.case);
        }
    }

    /// No payload of the argument way is one an argument cannot hold.
    #[test]
    fn the_argument_way_takes_only_what_an_argument_holds() {
        for p in PAYLOADS.iter().filter(|p| p.ways & ARG != 0) {
            let fits = match p.bytes {
                Bytes::Exactly(b) => !b.contains(&0) && b != b"-",
                Bytes::Text(n) => n <= LONGEST_ARGUMENT,
                Bytes::AllValues | Bytes::Binary(_) => false,
            };
            assert!(fits, "{}", p.name);
        }
    }
}

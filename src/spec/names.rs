//! The statements of spec/FORMAT.md that the reference runs, by name.
//!
//! Compiled into the library and into build.rs, so that the build fails
//! when FORMAT.md and this list disagree.

macro_rules! statements {
    ($($variant:ident = $name:literal,)*) => {
        /// One named SQL statement of spec/FORMAT.md.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Stmt { $(#[doc = concat!("The block `sql ", $name, "`.")] $variant,)* }

        impl Stmt {
            /// Every statement, in the order of this list.
            pub const ALL: &'static [Stmt] = &[$(Stmt::$variant,)*];

            /// The block name in FORMAT.md (```` ```sql NAME ````).
            pub const fn name(self) -> &'static str {
                match self { $(Stmt::$variant => $name,)* }
            }
        }
    };
}

statements! {
    CreateMeta = "create_meta",
    CreateJobs = "create_jobs",
    CreateIndexDue = "create_index_due",
    CreateIndexNext = "create_index_next",
    CreateIndexLeases = "create_index_leases",
    CreateIndexState = "create_index_state",
    SetWal = "set_wal",
    BeginImmediate = "begin_immediate",
    FindTables = "find_tables",
    CountSchema = "count_schema",
    ReadApplicationId = "read_application_id",
    SetApplicationId = "set_application_id",
    InsertMeta = "insert_meta",
    Commit = "commit",
    Rollback = "rollback",
    SetBusyTimeout = "set_busy_timeout",
    SetSynchronous = "set_synchronous",
    ReadBusyTimeout = "read_busy_timeout",
    ReadVersion = "read_version",
    ReadJournalMode = "read_journal_mode",
    FindIndex = "find_index",
    Add = "add",
    Look = "look",
    ExpireUnleased = "expire_unleased",
    ReapDead = "reap_dead",
    ReapReady = "reap_ready",
    NextRunAt = "next_run_at",
    Pick = "pick",
    Take = "take",
    FinishDelete = "finish_delete",
    FinishKeep = "finish_keep",
    Fail = "fail",
    Renew = "renew",
    Release = "release",
    Retry = "retry",
    RetryAll = "retry_all",
    Delete = "delete",
    Purge = "purge",
    Get = "get",
    List = "list",
    Stats = "stats",
}

impl Stmt {
    /// The statements that build the schema, in the order they run.
    pub const SCHEMA: &'static [Stmt] = &[
        Stmt::CreateMeta,
        Stmt::CreateJobs,
        Stmt::CreateIndexDue,
        Stmt::CreateIndexNext,
        Stmt::CreateIndexLeases,
        Stmt::CreateIndexState,
    ];

    /// The statement whose block is named `name`.
    pub fn from_name(name: &str) -> Option<Stmt> {
        Stmt::ALL.iter().copied().find(|s| s.name() == name)
    }
}

//! What a case sees of a subject beyond its output: the file as any
//! program sees it ([`file`](mod@file)), and its system calls, through strace: the
//! one reader of a trace ([`strace`], which also knows what an
//! acknowledged add looks like), a trace turned into a recording of
//! what reached a ukue file's bytes ([`recording`]), and the CPU time a
//! process spends ([`cpu`]).

pub mod cpu;
pub mod file;
pub mod recording;
pub mod strace;

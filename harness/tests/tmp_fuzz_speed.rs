use std::time::Instant;
#[test]
fn speed() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/fuzz/ops_vs_model");
    let seeds: Vec<Vec<u8>> = std::fs::read_dir(&root).unwrap().map(|e| std::fs::read(e.unwrap().path()).unwrap()).collect();
    let t = Instant::now();
    let mut n = 0;
    for _ in 0..50 { for s in &seeds { ukue_harness::fuzzing::ops_vs_model(s); n += 1; } }
    eprintln!("ops_vs_model: {:.0} execs/s", n as f64 / t.elapsed().as_secs_f64());
    let t = Instant::now();
    for _ in 0..400 { let r = ukue_harness::model::run::Run::start(&ukue_harness::model::run::Target::reference(), 3).unwrap(); drop(r); }
    eprintln!("start: {:?} each", t.elapsed() / 400);
    let t = Instant::now();
    for _ in 0..400 { let d = tempfile::Builder::new().tempdir_in("/dev/shm").unwrap(); std::fs::write(d.path().join("x"), b"abc").unwrap(); drop(d); }
    eprintln!("tempdir: {:?} each", t.elapsed() / 400);
    let d = tempfile::Builder::new().tempdir_in("/dev/shm").unwrap();
    let p = d.path().join("a.ukue");
    drop(ukue::Ukue::create(&p).unwrap());
    let t = Instant::now();
    for _ in 0..400 { let u = ukue::Ukue::open(&p).unwrap(); drop(u); }
    eprintln!("open+close: {:?} each", t.elapsed() / 400);
    let keep = ukue::Ukue::open(&p).unwrap();
    let t = Instant::now();
    for _ in 0..400 { let u = ukue::Ukue::open(&p).unwrap(); drop(u); }
    eprintln!("open+close while another is open: {:?} each", t.elapsed() / 400);
    drop(keep);
}

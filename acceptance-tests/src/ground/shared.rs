//! The one ground a test binary shares between its tests.
//!
//! Tests run on many threads, each `#[tokio::test]` on its own runtime, so the ground is started on a thread of
//! its own (with a runtime that ends when start-up is done: a running ground needs no runtime) and kept in a
//! static. Statics are never dropped: the processes die with the test process through PDEATHSIG, and the next
//! session removes the directory (see `session`).
//!
//! With `LIQO_TEST_GROUND=DIR` set, the tests attach to the ground `acceptance-tests/ground up --dir DIR` left
//! running instead of starting one (CONTRIBUTING.md, "One test against a running ground"): the edit → result loop
//! of one test then skips the ground's start. The test command never sets it; it hands grounds from one binary to
//! the next instead (see [`pool`]).
use std::path::PathBuf;
use std::sync::OnceLock;

use super::{Ground, LiqoMode, pool};

/// The real-Liqo ground (version `$LIQO_VERSION`, default v1.2.0).
pub(super) fn get() -> &'static Ground {
    static SHARED: OnceLock<Result<Ground, String>> = OnceLock::new();
    get_or_start(&SHARED, LiqoMode::real())
}

/// The ground with Liqo's controllers played by the simulator (tests of the simulator and of faults real Liqo
/// cannot be made to produce).
pub(super) fn get_simulated() -> &'static Ground {
    static SHARED: OnceLock<Result<Ground, String>> = OnceLock::new();
    get_or_start(&SHARED, LiqoMode::Simulated)
}

fn get_or_start(shared: &'static OnceLock<Result<Ground, String>>, liqo: LiqoMode) -> &'static Ground {
    let started = shared.get_or_init(|| {
        if let Some(dir) = std::env::var_os("LIQO_TEST_GROUND") {
            return Ground::attach(&PathBuf::from(dir), &liqo, "LIQO_TEST_GROUND")
                .map_err(|e| format!("LIQO_TEST_GROUND: {e:#}"));
        }
        std::thread::spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("building a tokio runtime: {e}"))?;
            runtime.block_on(pool::milan_rome(liqo)).map_err(|e| format!("{e:#}"))
        })
        .join()
        .unwrap_or_else(|_| Err("the ground's start-up thread panicked".into()))
    });
    match started {
        Ok(ground) => ground,
        Err(reason) => panic!("the shared test ground did not start: {reason}"),
    }
}

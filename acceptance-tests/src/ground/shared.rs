//! The one ground a test binary shares between its tests.
//!
//! Tests run on many threads, each `#[tokio::test]` on its own runtime, so the ground is started on a thread of
//! its own (with a runtime that ends when start-up is done: a running ground needs no runtime) and kept in a
//! static. Statics are never dropped: the processes die with the test process through PDEATHSIG, and the next
//! session removes the directory (see `session`).
use std::sync::OnceLock;

use super::{Ground, MILAN, ROME};

pub(super) fn get() -> &'static Ground {
    static SHARED: OnceLock<Result<Ground, String>> = OnceLock::new();
    let started = SHARED.get_or_init(|| {
        std::thread::spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("building a tokio runtime: {e}"))?;
            runtime.block_on(Ground::start(&[MILAN, ROME])).map_err(|e| format!("{e:#}"))
        })
        .join()
        .unwrap_or_else(|_| Err("the ground's start-up thread panicked".into()))
    });
    match started {
        Ok(ground) => ground,
        Err(reason) => panic!("the shared test ground did not start: {reason}"),
    }
}

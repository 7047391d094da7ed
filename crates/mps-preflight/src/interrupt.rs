//! SIGINT, SIGTERM and SIGHUP (issue 15, part 2): the queries run in process groups of their
//! own, so a Ctrl-C to the CLI's group never reaches them. A thread waits for the signal, kills
//! and reaps every running query's group, and exits with 128 + the signal number.

use std::time::Duration;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// The longest the exit waits for the killed queries' leaders to be reaped.
const REAP_GRACE: Duration = Duration::from_millis(300);

/// Starts the thread that turns a signal into a clean exit.
pub(crate) fn install() -> std::io::Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("signals".to_owned())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                // Held until the exit, so no query starts meanwhile.
                let _stopped = mps_host::stop_all_queries(REAP_GRACE);
                std::process::exit(128 + signal);
            }
        })?;
    Ok(())
}

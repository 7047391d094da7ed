//! SIGINT, SIGTERM and SIGHUP: the queries run in process groups of their
//! own, so a Ctrl-C to the CLI's group never reaches them. A thread waits for the signal, kills
//! and reaps every running query's group, and exits with 128 + the signal number.

use std::sync::mpsc;
use std::time::Duration;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// The longest the exit waits for the killed queries' leaders to be reaped.
const REAP_GRACE: Duration = Duration::from_millis(300);

/// Starts the thread that turns a signal into a clean exit.
///
/// The thread starts before the signals are caught: caught with no thread to act on them (no
/// thread under `RLIMIT_NPROC`), they would be ignored, since signal-hook never
/// restores the default action. On an error the default actions stay in place.
pub(crate) fn install() -> std::io::Result<()> {
    let (sender, receiver) = mpsc::sync_channel::<Signals>(1);
    std::thread::Builder::new()
        .name("signals".to_owned())
        .spawn(move || {
            // No handler was installed when the sender is gone.
            let Ok(mut signals) = receiver.recv() else {
                return;
            };
            if let Some(signal) = signals.forever().next() {
                // Held until the exit, so no query starts meanwhile.
                let _stopped = mps_host::stop_all_queries(REAP_GRACE);
                std::process::exit(128 + signal);
            }
        })?;
    let signals = Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    // The thread waits on the receiver, which cannot be gone yet.
    let _ = sender.send(signals);
    Ok(())
}

//! SIGINT, SIGTERM and SIGHUP: the queries run in process groups of their own, so a Ctrl-C to
//! the CLI's group never reaches them. While none runs, the handlers exit at once with 128 +
//! the signal number. While one runs, they note the signal and wake the runners
//! (`mps_host::watch_interrupts`), whose poll already waits on the child: the runner that
//! wakes kills and reaps every running query's group, and the CLI exits with 128 + the signal
//! number. No thread waits for signals: one that lived through the run cost a probe a tenth of
//! its time on a two-vCPU machine (BENCHMARKS.md).

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// The longest the exit waits for the killed queries' leaders to be reaped.
const REAP_GRACE: Duration = Duration::from_millis(300);

/// The last signal caught while a query ran.
static CAUGHT: AtomicUsize = AtomicUsize::new(0);

/// Installs the handlers. On an error some may be installed: each of those exits at once
/// while no query runs, and the caller forbids queries, so none ever runs.
pub(crate) fn install() -> std::io::Result<()> {
    // A socket pair: signal-hook wakes it with a send that never blocks.
    let (wake, notify) = UnixStream::pair()?;
    wake.set_nonblocking(true)?;
    let idle = mps_host::no_query_running();
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        // In this order: the exit while idle comes before anything else.
        signal_hook::flag::register_conditional_shutdown(signal, 128 + signal, idle)?;
        signal_hook::flag::register_usize(signal, &CAUGHT, usize::try_from(signal).unwrap_or(0))?;
        signal_hook::low_level::pipe::register(signal, notify.try_clone()?)?;
    }
    mps_host::watch_interrupts(OwnedFd::from(wake), stop_and_exit);
    Ok(())
}

/// A signal came while queries ran: end them all, then exit with 128 + the signal.
fn stop_and_exit() {
    // Held until the exit, so no query starts meanwhile.
    let _stopped = mps_host::stop_all_queries(REAP_GRACE);
    let signal = i32::try_from(CAUGHT.load(Ordering::SeqCst)).unwrap_or(SIGTERM);
    std::process::exit(128 + signal);
}

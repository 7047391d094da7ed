//! What the reference module asks through a caller's `run_command` (its test seam), and the
//! snapshot those answers make: the drop-in (`mps_preflight.compat`) sends exactly the
//! reference's commands through it, so the reference's own test doubles keep working.
//!
//! Those two queries cannot tell the compute mode, the driver version, the caller's and the
//! servers' users, the daemon's scope, or whether the job's user reaches the pipe directory:
//! the snapshot is a v1 one, and those are unverified exactly as for any v1 snapshot. The control pipe and the pid file are read from this host,
//! as the reference reads them.
//!
//! Nor do they name the GPUs' models, which index order needs on a host of several GPUs
//! (CUDA numbers them fastest first, `nvidia-smi` in PCI order). Where the caller's torch
//! proves a device's UUID (`cuda_device_uuids`), that index needs nothing more; otherwise,
//! only where the `index,uuid` answer shows more than one GPU and `CUDA_DEVICE_ORDER` is not
//! `PCI_BUS_ID`, one more `nvidia-smi` query asks the models ([`models_query`]).

use std::collections::BTreeMap;
use std::time::Duration;

use mps_host::{PIPE_DIRECTORY_VAR, ProbeOptions, Query, Runner};
use sharing_policy::{
    DAEMON_QUERY_PROGRAM, EnvFacts, FileKind, GPU_QUERY_PROGRAM, HostFacts, MODELS_QUERY_ARGS,
    OsText, REFERENCE_DAEMON_STDIN, REFERENCE_GPU_QUERY_ARGS, Request, SCHEMA_V1,
};

/// The reference's GPU query: `nvidia-smi --query-gpu=index,uuid --format=csv,noheader`.
pub fn gpu_query(timeout: Duration) -> Query {
    Query {
        program: GPU_QUERY_PROGRAM.to_owned(),
        args: REFERENCE_GPU_QUERY_ARGS.map(str::to_owned).to_vec(),
        stdin: String::new(),
        env: BTreeMap::new(),
        env_removed: Vec::new(),
        timeout,
    }
}

/// The GPUs' models, asked after [`gpu_query`] only where its two columns leave index order in
/// doubt: `nvidia-smi --query-gpu=index,uuid,name --format=csv,noheader`, with the same
/// deadline and keywords.
pub fn models_query(timeout: Duration) -> Query {
    Query {
        args: MODELS_QUERY_ARGS.map(str::to_owned).to_vec(),
        ..gpu_query(timeout)
    }
}

/// The reference's daemon query: `nvidia-cuda-mps-control`, `get_server_list\n` on standard
/// input, `CUDA_MPS_PIPE_DIRECTORY` set to the pipe directory (the rest of the environment
/// inherited, as the reference's `os.environ.copy()`).
pub fn daemon_query(directory: &OsText, timeout: Duration) -> Query {
    Query {
        program: DAEMON_QUERY_PROGRAM.to_owned(),
        args: Vec::new(),
        stdin: REFERENCE_DAEMON_STDIN.to_owned(),
        env: BTreeMap::from([(PIPE_DIRECTORY_VAR.to_owned(), directory.clone())]),
        env_removed: Vec::new(),
        timeout,
    }
}

/// Observes the host as the reference does, its queries sent through `runner`: the GPU query;
/// the models query when `request` needs it ([`sharing_policy::needs_gpu_models`]: more than
/// one GPU, `CUDA_DEVICE_ORDER` not `PCI_BUS_ID`, and a device not proven by
/// `cuda_device_uuids`, what the caller's torch reports per index); then, when a socket or
/// FIFO is at the control path (the reference asks the daemon only then), the daemon query. A
/// v1 snapshot: nothing of v2 is recorded.
pub fn capture(
    env: EnvFacts,
    runner: &dyn Runner,
    options: &ProbeOptions,
    request: &Request,
    cuda_device_uuids: Option<BTreeMap<u32, String>>,
) -> HostFacts {
    let mut facts = HostFacts::unobserved(std::env::consts::OS, env);
    SCHEMA_V1.clone_into(&mut facts.schema);
    facts.learner_uuid.clone_from(&options.learner_uuid);
    facts.cuda_device_uuids = cuda_device_uuids;
    if !options.observe_cuda {
        return facts;
    }
    facts.gpu_query = Some(runner.run(&gpu_query(options.timeout)));
    if sharing_policy::needs_gpu_models(request, &facts) {
        facts.gpu_models_query = Some(runner.run(&models_query(options.timeout)));
    }
    let pipe = mps_host::observe_control_pipe(&facts.env);
    if matches!(pipe.stat.kind, FileKind::Socket | FileKind::Fifo) {
        let directory = facts.env.effective_pipe_directory();
        facts.daemon_query = Some(runner.run(&daemon_query(&directory, options.timeout)));
    }
    facts.control_pipe = Some(pipe);
    facts.pid_file = Some(mps_host::observe_pid_file(&facts.env));
    facts
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use sharing_policy::{CapturedText, QueryOutcome, QueryRecord};

    use super::*;

    /// Answers as the reference's doubles do, and keeps what it was asked.
    struct Double {
        asked: Mutex<Vec<Query>>,
    }

    impl Runner for Double {
        fn run(&self, query: &Query) -> QueryRecord {
            if let Ok(mut asked) = self.asked.lock() {
                asked.push(query.clone());
            }
            let stdout = if query.program == "nvidia-smi" {
                "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6\n"
            } else {
                "4428\n"
            };
            let outcome = QueryOutcome::Exited {
                code: Some(0),
                signal: None,
                stdout: CapturedText::from_bytes(stdout.as_bytes(), false),
                stderr: CapturedText::default(),
            };
            query.record(outcome, Duration::from_millis(1))
        }
    }

    #[test]
    fn the_reference_queries_are_sent_and_their_answers_validate_as_a_v1_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("control");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let env = EnvFacts {
            cuda_mps_pipe_directory: Some(OsText::from(dir.path().to_str().unwrap())),
            ..EnvFacts::default()
        };
        let double = Double {
            asked: Mutex::new(Vec::new()),
        };
        let request = Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
        let facts = capture(env, &double, &ProbeOptions::default(), &request, None);
        let asked = double.asked.into_inner().unwrap();
        assert_eq!(asked.len(), 2);
        assert_eq!(
            asked[0].args,
            ["--query-gpu=index,uuid", "--format=csv,noheader"]
        );
        assert_eq!(asked[1].stdin, "get_server_list\n");
        assert!(asked[1].args.is_empty() && asked[1].env_removed.is_empty());
        assert_eq!(facts.schema, SCHEMA_V1);

        let mut request = request;
        request.vocabulary = sharing_policy::Vocabulary::Reference;
        let evidence = sharing_policy::validate(&request, &facts).unwrap();
        assert_eq!(evidence.server_pid, Some(4428));
        let unverified: Vec<&str> = evidence
            .unverified
            .iter()
            .map(|code| code.as_str())
            .collect();
        assert_eq!(
            unverified,
            [
                "daemon-scope-unverified",
                "server-owner-unverified",
                "compute-mode-unverified",
                "server-status-unverified",
                "server-clients-unverified"
            ]
        );
    }
}

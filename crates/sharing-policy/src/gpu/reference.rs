//! The reference module's two-column GPU query, which names no model, and the models query the
//! drop-in adds only where index order is otherwise in doubt.

use std::borrow::Cow;
use std::fmt::Write as _;

use gpu_uuid::{GpuTable, GpuUuid};

use super::{
    HostTableError, NoAnswer, OtherQuery, ReadError, TableText, Unavailable, answer, pci_bus_order,
    visible,
};
use crate::device::parse_cuda_index;
use crate::{EnvFacts, GPU_QUERY_PROGRAM, HostFacts, QueryRecord, Request};

/// The reference's GPU query and the drop-in's models query are mps-protocol's; the reference's
/// two columns leave the GPUs' models unknown (index order is then trusted only under
/// `CUDA_DEVICE_ORDER=PCI_BUS_ID`, with one GPU, with the models of [`MODELS_QUERY_ARGS`], or
/// for an index this process's CUDA runtime proves) and the compute mode unverified, as for a
/// v1 snapshot.
pub use mps_protocol::{MODELS_QUERY_ARGS, REFERENCE_GPU_QUERY_ARGS};

/// Why the models query names no model for the reference's GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ModelsUnknown {
    /// No models query was asked: the `index,uuid` query names none.
    NoneNamed,
    /// The record is another program or other arguments than [`MODELS_QUERY_ARGS`].
    OtherQuery(OtherQuery),
    /// The models query gave no complete answer.
    NoAnswer(NoAnswer),
    /// A row without the three columns, as printed.
    RowWithoutColumns(String),
    /// A row with an empty name, as printed.
    RowWithoutName(String),
    /// It lists `models` GPUs where the `index,uuid` query lists `gpus`.
    CountDiffers { models: usize, gpus: usize },
    /// It has no row of this GPU's index and UUID, as the `index,uuid` query printed them.
    NoModelFor { index: String, uuid: String },
}

/// The reference query's two-column rows as table rows, with the models `models` names for
/// them. Without them (no models query, or one whose answer is not of these GPUs), each row
/// gets a model of its own that says so: GPUs of unknown models are never taken for one model
/// (which would trust index order on a host whose models may differ). The bus id is a
/// placeholder the validator never shows.
pub(super) fn rows(
    stdout: &str,
    models: Option<&QueryRecord>,
) -> Result<TableText<'static>, ReadError> {
    let mut pairs = Vec::new();
    for line in stdout.lines().filter(|line| !line.trim().is_empty()) {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let [index, uuid] = fields.as_slice() else {
            let line = line.to_owned();
            return Err(ReadError::Unavailable(Unavailable::NotTwoColumns(line)));
        };
        pairs.push((*index, *uuid));
    }
    let names = models.map_or_else(
        || Err(ModelsUnknown::NoneNamed),
        |models| model_names(&pairs, models),
    );
    let mut rows = String::with_capacity(stdout.len() * 2);
    for (position, (index, uuid)) in pairs.iter().enumerate() {
        let name = names.as_ref().ok().and_then(|names| names.get(position));
        // Writing to a String cannot fail.
        let _ = match name {
            Some(name) => writeln!(rows, "{index}, {uuid}, {name}, 0000:00:00.0"),
            None => writeln!(
                rows,
                "{index}, {uuid}, model of GPU {index} unknown, 0000:00:00.0"
            ),
        };
    }
    Ok(TableText {
        rows: Cow::Owned(rows),
        extras: Vec::new(),
        unknown_models: names.err(),
        health_rejected: None,
    })
}

/// The model of each of `pairs`' GPUs, in order, from the models query's answer; or why it
/// names none for them.
fn model_names(pairs: &[(&str, &str)], models: &QueryRecord) -> Result<Vec<String>, ModelsUnknown> {
    if models.program.rsplit('/').next() != Some(GPU_QUERY_PROGRAM)
        || models.args != MODELS_QUERY_ARGS
    {
        return Err(ModelsUnknown::OtherQuery(OtherQuery::of(models)));
    }
    let stdout = answer(models).map_err(ModelsUnknown::NoAnswer)?;
    let mut named = Vec::new();
    for line in stdout.lines().filter(|line| !line.trim().is_empty()) {
        let mut fields = line.splitn(3, ',').map(str::trim);
        let (Some(index), Some(uuid), Some(name)) = (fields.next(), fields.next(), fields.next())
        else {
            return Err(ModelsUnknown::RowWithoutColumns(line.to_owned()));
        };
        if name.is_empty() {
            return Err(ModelsUnknown::RowWithoutName(line.to_owned()));
        }
        named.push((index, GpuUuid::parse(uuid).ok(), name));
    }
    if named.len() != pairs.len() {
        return Err(ModelsUnknown::CountDiffers {
            models: named.len(),
            gpus: pairs.len(),
        });
    }
    pairs
        .iter()
        .map(|&(index, uuid)| {
            let parsed = GpuUuid::parse(uuid).ok();
            named
                .iter()
                .find(|&&(i, u, _)| i == index && u.is_some() && u == parsed)
                .map(|&(_, _, name)| name.to_owned())
                .ok_or_else(|| ModelsUnknown::NoModelFor {
                    index: index.to_owned(),
                    uuid: uuid.to_owned(),
                })
        })
        .collect()
}

/// Whether the drop-in must ask the GPUs' models ([`MODELS_QUERY_ARGS`]) to judge `request` on
/// `facts`: the GPU query is the reference's (no models), none was asked yet, and a CUDA device
/// of the request relies on index order that nothing else settles: more than one GPU,
/// `CUDA_DEVICE_ORDER` not `PCI_BUS_ID`, and no UUID this process's CUDA runtime reported for
/// the index ([`HostFacts::cuda_device_uuids`]) equal to the row it maps to. The learner's index
/// counts only without a supplied learner UUID, as the validator resolves it only then.
pub fn needs_gpu_models(request: &Request, facts: &HostFacts) -> bool {
    let Some(query) = facts.gpu_query.as_ref() else {
        return false;
    };
    if query.args != REFERENCE_GPU_QUERY_ARGS
        || facts.gpu_models_query.is_some()
        || pci_bus_order(&facts.env)
    {
        return false;
    }
    let text = super::host_text(facts);
    let table = super::parse_table(&text);
    if table.as_ref().map_or(true, |table| table.len() < 2) {
        return false;
    }
    let Ok(visible) = visible(facts, &text, &table) else {
        return false;
    };
    let learner = parse_cuda_index(&request.learner_device)
        .ok()
        .filter(|_| facts.learner_uuid.is_none());
    let collector = request
        .collector_device
        .as_deref()
        .and_then(|device| parse_cuda_index(device).ok());
    [learner, collector]
        .into_iter()
        .flatten()
        .any(|index| matches!(visible.uuid(index), Err(super::Failure::UntrustedOrder(_))))
}

/// The host GPU table of the reference's query, completed by the models query when one was
/// asked, and why index order is in doubt on it under `env`, if it is: the drop-in's
/// `resolve_mps_visibility_entries`, which has no CUDA runtime to ask.
///
/// # Errors
/// As [`super::host_gpu_table`], for the reference's query.
pub fn reference_gpu_table(
    env: &EnvFacts,
    query: &QueryRecord,
    models: Option<&QueryRecord>,
) -> Result<(GpuTable, Option<String>), HostTableError> {
    let text = super::table_text(query, models)?;
    let table = GpuTable::from(super::parse_rows(&text.rows)?);
    if super::index_order_trusted(env, &table) {
        return Ok((table, None));
    }
    let names = table.rows().iter().map(|row| row.name.as_str());
    let models = super::models_doubt(text.unknown_models.as_ref(), names);
    Ok((table, Some(models.to_string())))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::{CapturedText, QueryOutcome};

    fn record(args: [&str; 2], stdout: &str) -> QueryRecord {
        QueryRecord {
            program: GPU_QUERY_PROGRAM.to_owned(),
            args: args.map(String::from).to_vec(),
            stdin: String::new(),
            env: BTreeMap::new(),
            env_removed: Vec::new(),
            timeout_ms: 5000,
            elapsed_ms: 1,
            outcome: QueryOutcome::Exited {
                code: Some(0),
                signal: None,
                stdout: CapturedText::from_bytes(stdout.as_bytes(), false),
                stderr: CapturedText::default(),
            },
            earlier_attempts: Vec::new(),
        }
    }

    const TWO: &str = "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6\n1, GPU-5a88edbe-90c4-2449-8c43-70c57591cca1\n";

    #[test]
    fn the_reference_two_column_table_is_read_and_never_taken_for_one_model() {
        let table = super::super::host_gpu_table(&record(REFERENCE_GPU_QUERY_ARGS, TWO)).unwrap();
        assert_eq!(table.len(), 2);
        assert!(!table.is_homogeneous(), "unknown models are not one model");
        assert!(!super::super::index_order_trusted(
            &EnvFacts::default(),
            &table
        ));
        let one = super::super::host_gpu_table(&record(
            REFERENCE_GPU_QUERY_ARGS,
            "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6\n",
        ))
        .unwrap();
        assert!(super::super::index_order_trusted(
            &EnvFacts::default(),
            &one
        ));
        for bad in [
            "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, H100\n",
            "0\n",
            "x, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6\n",
        ] {
            let query = record(REFERENCE_GPU_QUERY_ARGS, bad);
            assert!(super::super::host_gpu_table(&query).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_models_query_completes_the_table_only_when_it_answers_for_the_same_gpus() {
        let env = EnvFacts::default();
        let query = record(REFERENCE_GPU_QUERY_ARGS, TWO);
        let same = "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3\n1, GPU-5a88edbe-90c4-2449-8c43-70c57591cca1, NVIDIA H100 80GB HBM3\n";
        let (table, doubt) =
            reference_gpu_table(&env, &query, Some(&record(MODELS_QUERY_ARGS, same))).unwrap();
        assert!(table.is_homogeneous() && doubt.is_none());
        let mixed = same.replacen("H100 80GB HBM3", "A100-SXM4-40GB", 1);
        let (_, doubt) =
            reference_gpu_table(&env, &query, Some(&record(MODELS_QUERY_ARGS, &mixed))).unwrap();
        assert_eq!(
            doubt.as_deref(),
            Some(
                "the host GPUs are different models (NVIDIA A100-SXM4-40GB, NVIDIA H100 80GB HBM3)"
            )
        );
        // Answers that are not the models of these GPUs leave the models unknown.
        let swapped = same.replacen("0, GPU-8932", "1, GPU-8932", 1).replacen(
            "1, GPU-5a88",
            "0, GPU-5a88",
            1,
        );
        let unknown = |models: &QueryRecord| {
            let (table, doubt) = reference_gpu_table(&env, &query, Some(models)).unwrap();
            assert!(!table.is_homogeneous() && doubt.is_some(), "{models:?}");
            super::super::table_text(&query, Some(models))
                .unwrap()
                .unknown_models
        };
        for (answer, why) in [
            (
                TWO,
                ModelsUnknown::RowWithoutColumns(TWO.lines().next().unwrap().to_owned()),
            ),
            (
                "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3\n",
                ModelsUnknown::CountDiffers { models: 1, gpus: 2 },
            ),
            (
                swapped.as_str(),
                ModelsUnknown::NoModelFor {
                    index: "0".to_owned(),
                    uuid: "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6".to_owned(),
                },
            ),
            (
                "garbage\n",
                ModelsUnknown::RowWithoutColumns("garbage".to_owned()),
            ),
        ] {
            assert_eq!(unknown(&record(MODELS_QUERY_ARGS, answer)), Some(why));
        }
        let mut failed = record(MODELS_QUERY_ARGS, "");
        failed.outcome = QueryOutcome::SpawnFailed {
            error: "No such file or directory".to_owned(),
        };
        assert_eq!(
            unknown(&failed),
            Some(ModelsUnknown::NoAnswer(NoAnswer::SpawnFailed(
                "No such file or directory".to_owned()
            )))
        );
        let pci = EnvFacts {
            cuda_device_order: Some(crate::OsText::from("PCI_BUS_ID")),
            ..EnvFacts::default()
        };
        assert_eq!(reference_gpu_table(&pci, &query, None).unwrap().1, None);
    }

    fn host(stdout: &str) -> HostFacts {
        let mut facts = HostFacts::unobserved("linux", EnvFacts::default());
        facts.gpu_query = Some(record(REFERENCE_GPU_QUERY_ARGS, stdout));
        facts
    }

    #[test]
    fn the_models_are_needed_only_where_nothing_settles_the_order() {
        let request = Request::new(Some("mps"), "cuda:1", Some("cuda:1"), "mjwarp");
        assert!(needs_gpu_models(&request, &host(TWO)));
        // One GPU; CUDA_DEVICE_ORDER=PCI_BUS_ID; UUIDs in the mask: no doubt.
        let one = host("0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6\n");
        assert!(!needs_gpu_models(
            &Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp"),
            &one
        ));
        let mut pci = host(TWO);
        pci.env.cuda_device_order = Some(crate::OsText::from("PCI_BUS_ID"));
        assert!(!needs_gpu_models(&request, &pci));
        let mut by_uuid = host(TWO);
        by_uuid.env.cuda_visible_devices = Some(crate::OsText::from("GPU-5a88edbe"));
        let zero = Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
        assert!(!needs_gpu_models(&zero, &by_uuid));
        // A witness equal to the row settles its index; one that differs does not.
        let mut witnessed = host(TWO);
        witnessed.cuda_device_uuids = Some(BTreeMap::from([(
            1,
            "5a88edbe-90c4-2449-8c43-70c57591cca1".to_owned(),
        )]));
        assert!(!needs_gpu_models(&request, &witnessed));
        witnessed.cuda_device_uuids = Some(BTreeMap::from([(
            1,
            "8932f937-d72c-4106-c12f-20bd9faed9f6".to_owned(),
        )]));
        assert!(needs_gpu_models(&request, &witnessed));
        // Asked once only.
        let mut asked = host(TWO);
        asked.gpu_models_query = Some(record(MODELS_QUERY_ARGS, ""));
        assert!(!needs_gpu_models(&request, &asked));
    }

    fn resolve(facts: &HostFacts, index: u32) -> Result<GpuUuid, crate::gpu::Failure> {
        let text = crate::gpu::host_text(facts);
        let table = crate::gpu::parse_table(&text);
        visible(facts, &text, &table)?.uuid(index)
    }

    #[test]
    fn a_reported_uuid_proves_the_order_for_its_index_only() {
        use crate::gpu::Failure::UntrustedOrder;
        use crate::gpu::ModelsDoubt;
        let mut facts = host(TWO);
        facts.cuda_device_uuids = Some(BTreeMap::from([(
            1,
            "GPU-5a88edbe-90c4-2449-8c43-70c57591cca1".to_owned(),
        )]));
        assert_eq!(
            resolve(&facts, 1).unwrap().to_string(),
            "GPU-5a88edbe-90c4-2449-8c43-70c57591cca1"
        );
        let Err(UntrustedOrder(why)) = resolve(&facts, 0) else {
            panic!("index 0 is not witnessed");
        };
        assert_eq!(why.models, ModelsDoubt::Unknown(ModelsUnknown::NoneNamed));
        assert_eq!(why.contradiction, None);
        facts.cuda_device_uuids = Some(BTreeMap::from([(
            0,
            "5a88edbe-90c4-2449-8c43-70c57591cca1".to_owned(),
        )]));
        let Err(UntrustedOrder(why)) = resolve(&facts, 0) else {
            panic!("a contradicting witness proves nothing");
        };
        let contradiction = why.contradiction.unwrap();
        assert_eq!(
            (contradiction.index, contradiction.reported.as_str()),
            (0, "5a88edbe-90c4-2449-8c43-70c57591cca1")
        );
        assert_eq!(
            contradiction.uuid.to_string(),
            "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"
        );
    }
}

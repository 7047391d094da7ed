//! The words of what the GPU query and `CUDA_VISIBLE_DEVICES` show ([`crate::gpu`]): why there
//! is no host GPU table, why a device's physical GPU is not proven, why the health columns are
//! missing.

use std::fmt::{self, Write as _};

use crate::gpu::{
    Failure, HealthRejected, ModelsDoubt, ModelsUnknown, NoAnswer, NoneVisible, OtherQuery,
    OutOfRange, ReadError, Shortened, Unavailable, UntrustedOrder,
};
use crate::text::repr;
use crate::{GPU_QUERY_ARGS, GPU_QUERY_PROGRAM, HostTableError, MODELS_QUERY_ARGS, OsText};

/// Why a recorded GPU query gives no host GPU table.
pub(crate) fn read_error(err: &ReadError) -> String {
    match err {
        ReadError::NotTheQuery(query) => other_query(query),
        ReadError::Unavailable(why) => unavailable(why),
    }
}

/// The public error's message is these words: [`crate::host_gpu_table`] and
/// [`crate::reference_gpu_table`] return it.
impl From<ReadError> for HostTableError {
    fn from(err: ReadError) -> Self {
        match err {
            ReadError::NotTheQuery(query) => Self::NotTheQuery(other_query(&query)),
            ReadError::Unavailable(why) => Self::Unavailable(unavailable(&why)),
        }
    }
}

fn other_query(query: &OtherQuery) -> String {
    format!(
        "its GPU query ran {} {:?} instead of {GPU_QUERY_PROGRAM} {:?}",
        repr(&query.program),
        query.args,
        GPU_QUERY_ARGS
    )
}

fn unavailable(why: &Unavailable) -> String {
    match why {
        Unavailable::NotRecorded => "no host GPU query was recorded".to_owned(),
        Unavailable::NoAnswer(why) => no_answer(why),
        Unavailable::RowLacksExtras { row, health } => {
            let columns = if *health {
                "compute mode, driver version and health"
            } else {
                "compute mode and driver version"
            };
            format!(
                "a row of the GPU query lacks its {columns} columns: {}",
                repr(row)
            )
        }
        Unavailable::NotTwoColumns(row) => format!(
            "a row of the index,uuid GPU query does not have exactly 2 columns: {}",
            repr(row)
        ),
        Unavailable::Table(err) => err.to_string(),
    }
}

/// Why `nvidia-smi` gave no answer (the GPU query's or the models query's).
fn no_answer(why: &NoAnswer) -> String {
    match why {
        NoAnswer::SpawnFailed(error) => {
            format!("{GPU_QUERY_PROGRAM} could not be started: {error}")
        }
        NoAnswer::TimedOut { timeout_ms } => {
            format!("{GPU_QUERY_PROGRAM} did not finish within {timeout_ms} ms")
        }
        NoAnswer::CutShort => format!("the output of {GPU_QUERY_PROGRAM} was cut short"),
        NoAnswer::NotUtf8 => format!("the output of {GPU_QUERY_PROGRAM} is not UTF-8"),
        NoAnswer::Failed { code, signal, said } => {
            let how = match (code, signal) {
                (Some(code), _) => format!("exited with status {code}"),
                (None, Some(signal)) => format!("was killed by signal {signal}"),
                (None, None) => "ended without an exit status".to_owned(),
            };
            let said = said
                .as_ref()
                .map(|line| format!(": {line}"))
                .unwrap_or_default();
            format!("{GPU_QUERY_PROGRAM} {how}{said}")
        }
    }
}

/// What was found where a device's physical GPU is not proven.
pub(crate) fn failure(failure: &Failure) -> String {
    match failure {
        Failure::NoTable(why) => unavailable(why),
        Failure::NotTheQuery(query) => other_query(query),
        Failure::NoneVisible(why) => none_visible(why),
        Failure::OutOfRange(out) => out_of_range(out),
        Failure::Mig(err) => err.to_string(),
        Failure::UntrustedOrder(why) => untrusted_order(why),
    }
}

fn none_visible(why: &NoneVisible) -> String {
    match why {
        NoneVisible::NotUtf8(mask) => format!(
            "{} is not valid UTF-8, so which GPUs it selects is not proven",
            mask_words(Some(mask))
        ),
        NoneVisible::Unresolved { mask, error } => {
            format!("{}: {error}", mask_words(Some(mask)))
        }
        NoneVisible::Empty { mask, shortened } => format!(
            "{} makes no GPU visible{}",
            mask_words(Some(mask)),
            shortened_words(shortened.as_ref())
        ),
    }
}

fn out_of_range(out: &OutOfRange) -> String {
    let count = if out.visible == 1 {
        "1 GPU is".to_owned()
    } else {
        format!("{} GPUs are", out.visible)
    };
    format!(
        "{count} visible with {}{}",
        mask_words(out.mask.as_ref()),
        shortened_words(out.shortened.as_ref())
    )
}

fn untrusted_order(why: &UntrustedOrder) -> String {
    let mut words = format!(
        "with {}, device indices follow CUDA's enumeration order; {} and ",
        mask_words(why.mask.as_ref()),
        why.models
    );
    // Writing to a String cannot fail.
    let _ = match &why.order {
        None => write!(words, "CUDA_DEVICE_ORDER is unset"),
        Some(order) => write!(
            words,
            "CUDA_DEVICE_ORDER={}",
            repr(&order.to_string_lossy())
        ),
    };
    if let Some(contradiction) = &why.contradiction {
        let _ = write!(
            words,
            "; this process's CUDA runtime reports cuda:{} as {}, not nvidia-smi's {}",
            contradiction.index,
            repr(&contradiction.reported),
            contradiction.uuid
        );
    }
    words
}

/// `CUDA_VISIBLE_DEVICES='…'`, or "`CUDA_VISIBLE_DEVICES` unset" for `None`.
fn mask_words(mask: Option<&OsText>) -> String {
    mask.map_or_else(
        || "CUDA_VISIBLE_DEVICES unset".to_owned(),
        |value| format!("CUDA_VISIBLE_DEVICES={}", repr(&value.to_string_lossy())),
    )
}

/// Why the visible list is shorter than written (`": …"`, in `gpu_uuid`'s words), else nothing.
fn shortened_words(shortened: Option<&Shortened>) -> String {
    match shortened {
        Some(Shortened::Duplicate(duplicate)) => format!(": {duplicate}"),
        Some(Shortened::Stop(stop)) => format!(": {stop}"),
        None => String::new(),
    }
}

/// What makes index order doubtful. A `Display`, as [`crate::reference_gpu_table`] (in `gpu`,
/// which may not import this floor) returns it as text.
impl fmt::Display for ModelsDoubt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unknown(why) => {
                write!(
                    f,
                    "the host GPUs' models are unknown ({})",
                    models_unknown(why)
                )
            }
            Self::Different(names) => {
                write!(
                    f,
                    "the host GPUs are different models ({})",
                    names.join(", ")
                )
            }
        }
    }
}

fn models_unknown(why: &ModelsUnknown) -> String {
    let asked = format!("{GPU_QUERY_PROGRAM} {}", MODELS_QUERY_ARGS[0]);
    match why {
        ModelsUnknown::NoneNamed => "the index,uuid query names none".to_owned(),
        ModelsUnknown::OtherQuery(query) => format!(
            "the models query ran {} {:?} instead of {asked}",
            repr(&query.program),
            query.args
        ),
        ModelsUnknown::NoAnswer(why) => format!("{asked} gave no models: {}", no_answer(why)),
        ModelsUnknown::RowWithoutColumns(row) => format!(
            "{asked} answered a row without index, uuid and name: {}",
            repr(row)
        ),
        ModelsUnknown::RowWithoutName(row) => {
            format!("{asked} answered a row without a name: {}", repr(row))
        }
        ModelsUnknown::CountDiffers { models, gpus } => {
            format!("{asked} listed {models} GPUs where the index,uuid query listed {gpus}")
        }
        ModelsUnknown::NoModelFor { index, uuid } => {
            format!("{asked} names no model for GPU {index} ({uuid})")
        }
    }
}

/// Why the health columns are missing: the line `nvidia-smi` printed, or that the query was not
/// answered.
pub(crate) fn health_rejected(why: &HealthRejected) -> &str {
    match why {
        HealthRejected::Field(line) => line,
        HealthRejected::NotAnswered => "the GPU query with the health columns was not answered",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untrusted_order_names_the_mask_the_models_the_order_and_a_contradicting_runtime() {
        let uuid = gpu_uuid::GpuUuid::parse("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6").unwrap();
        let why = Failure::UntrustedOrder(Box::new(UntrustedOrder {
            mask: None,
            models: ModelsDoubt::Unknown(ModelsUnknown::NoneNamed),
            order: None,
            contradiction: Some(crate::gpu::Contradiction {
                index: 0,
                reported: "5a88edbe-90c4-2449-8c43-70c57591cca1".to_owned(),
                uuid,
            }),
        }));
        assert_eq!(
            failure(&why),
            "with CUDA_VISIBLE_DEVICES unset, device indices follow CUDA's enumeration order; the host GPUs' models are unknown (the index,uuid query names none) and CUDA_DEVICE_ORDER is unset; this process's CUDA runtime reports cuda:0 as '5a88edbe-90c4-2449-8c43-70c57591cca1', not nvidia-smi's GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"
        );
        let count = ModelsUnknown::CountDiffers { models: 1, gpus: 2 };
        assert_eq!(
            ModelsDoubt::Unknown(count).to_string(),
            "the host GPUs' models are unknown (nvidia-smi --query-gpu=index,uuid,name listed 1 GPUs where the index,uuid query listed 2)"
        );
    }
}

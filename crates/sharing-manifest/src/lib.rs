//! The CUDA process-sharing evidence as JSON, recorded into run manifests and merged across ranks.

#include "formats/shard/writer/artifact_writer.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "formats/shard/format.h"
#include "formats/shard/writer/artifact_files.h"
#include "formats/shard/writer/artifact_tensors.h"
#include "formats/shard/writer/checked_io.h"
#include "formats/shard/writer/file_digest.h"
#include "support/input_pages.h"
#include "formats/shard/writer/manifest_json.h"
#include "formats/shard/writer/model_json.h"
#include "formats/shard/writer/output_preflight.h"
#include "formats/shard/writer/parallel_tasks.h"
#include "formats/shard/writer/shard_file.h"
#include "formats/shard/writer/source_commit.h"
#include "formats/shard/writer/sparse_tensors.h"
#include "formats/shard/writer/staging_dir.h"
#include "support/status_macros.h"
#include "support/threads.h"

#ifndef SLIMPACK_VERSION
#define SLIMPACK_VERSION "0.0.0"
#endif

namespace slimpack::shard_writer {
namespace {

// Room for manifest.json and directory entries in the free-space check.
constexpr uint64_t kManifestReserve = 16ull << 20;

struct PlannedTensor {
  ArtifactTensor source;
  ir::DType dtype = ir::DType::kUndefined;  // as stored
  uint64_t nbytes = 0;                      // as stored
};

// The tensors as stored and their shard plan (WriteArtifact and
// TensorsOfPart plan alike).
absl::StatusOr<ShardPlan> PlanStoredTensors(const ir::Model& model, const ArtifactOptions& options,
                                            SparseStorage* sparse,
                                            std::vector<PlannedTensor>* tensors);

absl::Status CheckPart(const PartSpec& part) {
  if (part.count == 0 || part.index >= part.count) {
    return absl::InvalidArgumentError("part " + std::to_string(part.index + 1) + "/" +
                                      std::to_string(part.count) + " does not exist");
  }
  return absl::OkStatus();
}

// The digest of a file another part writes (PartSpec): 64 zeros, filled in
// by MergeParts from the part that wrote it.
constexpr char kUnknownDigest[] =
    "0000000000000000000000000000000000000000000000000000000000000000";

absl::StatusOr<std::vector<PlannedTensor>> StoredTensors(
    const ir::Model& model, const TensorEncoder& encoder, bool pack_sparse,
    SparseStorage* sparse) {
  ASSIGN_OR_RETURN(std::vector<ArtifactTensor> tensors,
                   CollectArtifactTensors(model));
  RETURN_IF_ERROR(PrepareSparseTensors(tensors, pack_sparse, encoder.sparse_zeros, sparse));
  std::vector<PlannedTensor> out;
  out.reserve(tensors.size());
  for (ArtifactTensor& t : tensors) {
    PlannedTensor p;
    // Attribute tensors define what a node computes (ConstantOfShape's
    // value sets its output type), so only weights go through the encoder.
    p.dtype = encoder.output_dtype && !t.is_attribute
                  ? encoder.output_dtype(*t.tensor)
                  : t.tensor->dtype;
    ASSIGN_OR_RETURN(uint64_t numel, t.tensor->NumElements());
    numel = StoredElements(numel, *sparse, t.name);  // 2:4 packed: half
    // ggml blocks: rows x row bytes (CollectArtifactTensors checked them).
    auto nbytes = t.tensor->quant.kind == ir::QuantKind::kGgmlBlocks
                      ? std::optional<uint64_t>(t.tensor->ExpectedBytes().value())
                      : ir::DTypeByteSize(p.dtype, numel);
    if (!nbytes || p.dtype == ir::DType::kUndefined) {
      return absl::InvalidArgumentError(
          "tensor '" + t.name + "': cannot be stored as " +
          std::string(ir::DTypeName(p.dtype)));
    }
    p.nbytes = *nbytes;
    p.source = std::move(t);
    out.push_back(std::move(p));
  }
  return out;
}

absl::StatusOr<ShardPlan> PlanStoredTensors(const ir::Model& model, const ArtifactOptions& options,
                                            SparseStorage* sparse,
                                            std::vector<PlannedTensor>* tensors) {
  ASSIGN_OR_RETURN(*tensors,
                   StoredTensors(model, options.encoder, options.pack_sparse_2_4, sparse));
  std::vector<PlanItem> items;
  items.reserve(tensors->size());
  for (const PlannedTensor& t : *tensors) {
    items.push_back({t.source.name, t.source.tensor->layer, t.nbytes});
  }
  return PlanShards(items, options.shard_size);
}

// Writes an in-memory carried file into the staging directory, fsynced.
absl::StatusOr<FileDigest> WriteBytesHashed(const std::string& bytes, int dir_fd,
                                            const std::string& name,
                                            const std::string& dst_path) {
  ASSIGN_OR_RETURN(int fd, CreateExclusive(dir_fd, name, dst_path));
  absl::Status status = WriteAll(fd, bytes.data(), bytes.size(), dst_path, 0);
  if (status.ok()) status = Fsync(fd, dst_path);
  absl::Status closed = Close(fd, dst_path);
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(closed);
  return FileDigest{bytes.size(), Sha256Stream::HashHex(bytes.data(), bytes.size())};
}

// Serialises progress reports from the worker threads.
class ProgressTracker {
 public:
  ProgressTracker(const ArtifactOptions& options, uint64_t bytes_total,
                  uint32_t files_total)
      : options_(options) {
    state_.bytes_total = bytes_total;
    state_.files_total = files_total;
  }

  void AddBytes(uint64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    state_.bytes_done += n;
    state_.last_file = {};
    if (options_.fault_hook) options_.fault_hook("bytes", state_.bytes_done);
    if (options_.progress) options_.progress(state_);
  }

  void FileDone(const std::string& name, std::string_view phase) {
    std::lock_guard<std::mutex> lock(mu_);
    ++state_.files_done;
    state_.last_file = name;
    if (options_.fault_hook) options_.fault_hook(phase, state_.bytes_done);
    if (options_.progress) options_.progress(state_);
    state_.last_file = {};
  }

 private:
  const ArtifactOptions& options_;
  std::mutex mu_;
  WriteProgress state_;
};

absl::Status WriteManifest(const StagingDir& staging, const std::string& text,
                           std::string_view file_name) {
  const std::string name(file_name);
  const std::string path = staging.path() + "/" + name;
  ASSIGN_OR_RETURN(int fd, CreateExclusive(staging.fd(), name, path));
  absl::Status s = WriteAll(fd, text.data(), text.size(), path, 0);
  if (s.ok()) s = Fsync(fd, path);
  absl::Status closed = Close(fd, path);
  RETURN_IF_ERROR(s);
  return closed;
}

// One run of WriteArtifact: everything decided before writing (Plan), the
// parallel file writes, the manifest, the commit.
class ArtifactJob {
 public:
  ArtifactJob(const ir::Model& model, const std::string& output,
              const ArtifactOptions& options)
      : model_(model), output_(output), options_(options) {}

  // Preflight and planning: nothing is written before this succeeds.
  absl::Status Plan() {
    if (!options_.recipe.is_object()) {
      return absl::InvalidArgumentError("the recipe must be a JSON object");
    }
    ASSIGN_OR_RETURN(OutputState state,
                     PreflightOutput(output_, options_.force));
    std::vector<std::string> inputs = model_.input_files;
    inputs.insert(inputs.end(), model_.carried_files.begin(),
                  model_.carried_files.end());
    inputs.push_back(model_.source_path);
    RETURN_IF_ERROR(CheckInputsOutsideOutput(inputs, output_));
    // The model record under the loader's rules (graph dims, architecture
    // counts): refused here, before a byte is written, not at the manifest.
    ASSIGN_OR_RETURN(model_json_, ModelJson(model_));

    ASSIGN_OR_RETURN(plan_, PlanStoredTensors(model_, options_, &sparse_, &tensors_));
    ASSIGN_OR_RETURN(carried_, CarriedFiles(model_));
    ASSIGN_OR_RETURN(inputs_, InputFiles(model_));

    if (options_.part) RETURN_IF_ERROR(CheckPart(*options_.part));
    owner_ = AssignShardsToParts(plan_, options_.part ? options_.part->count : 1);

    summary_.output = NormalizeOutputPath(output_);
    summary_.tensors = tensors_.size();
    summary_.replaced = state == OutputState::kArtifact;
    for (size_t i = 0; i < plan_.shards.size(); ++i) {
      if (!Writes(i)) continue;
      ++summary_.shards;
      summary_.shard_bytes += plan_.shards[i].file_size;
    }
    if (FirstPart()) {
      for (const auto& c : carried_) summary_.carried_bytes += c.size;
      for (const auto& f : inputs_) summary_.input_bytes += f.size;
    }
    return CheckFreeSpace(output_, summary_.shard_bytes +
                                       summary_.carried_bytes +
                                       kManifestReserve);
  }

  // Shards, carried files and input digests on the thread pool.
  absl::Status WriteFiles(const StagingDir& staging) {
    const support::InputPages pages = support::InputPages::Snapshot(model_.input_files);
    ProgressTracker tracker(
        options_, summary_.shard_bytes + summary_.carried_bytes,
        static_cast<uint32_t>(summary_.shards + (FirstPart() ? carried_.size() : 0)));
    const TensorEncoder encoder = WithDeferredSparse(options_.encoder);
    ShardWriteContext ctx;
    ctx.dir_fd = staging.fd();
    ctx.dir_for_errors = staging.path();
    ctx.encoder = &encoder;
    ctx.pages = &pages;
    ctx.on_bytes = [&tracker](uint64_t n) { tracker.AddBytes(n); };
    shard_digests_.resize(plan_.shards.size());
    carried_digests_.resize(carried_.size());
    input_digests_.resize(inputs_.size());

    // Which tensor each shard's writer is on (shard_file.h), and the one
    // after it a thread with nothing left has started making (help below).
    constexpr size_t kNone = SIZE_MAX;
    std::vector<std::atomic<size_t>> writing(plan_.shards.size());
    std::vector<std::atomic<size_t>> ahead(plan_.shards.size());
    for (size_t i = 0; i < plan_.shards.size(); ++i) {
      writing[i].store(kNone);
      ahead[i].store(kNone);
    }
    // Biggest job first, so the last one to finish is a small one.
    std::vector<std::pair<uint64_t, std::function<absl::Status()>>> jobs;
    for (size_t i = 0; i < plan_.shards.size(); ++i) {
      if (!Writes(i)) {
        // Another part writes it: its planned name and size, no digest yet.
        shard_digests_[i] = {ShardFileName(static_cast<uint32_t>(i)), plan_.shards[i].file_size,
                             kUnknownDigest};
        continue;
      }
      jobs.emplace_back(plan_.shards[i].file_size, [this, i, &ctx, &tracker, &writing] {
        return WriteShard(i, ctx, tracker, &writing[i]);
      });
    }
    if (!FirstPart()) {
      // Part 1 copies the carried files and hashes the inputs.
      for (size_t i = 0; i < carried_.size(); ++i) {
        carried_digests_[i] = {carried_[i].name, carried_[i].size, kUnknownDigest};
      }
      for (size_t i = 0; i < inputs_.size(); ++i) {
        input_digests_[i] = {inputs_[i].name, inputs_[i].size, kUnknownDigest};
      }
    }
    for (size_t i = 0; FirstPart() && i < carried_.size(); ++i) {
      jobs.emplace_back(carried_[i].size, [this, i, &staging, &tracker] {
        return CopyCarried(i, staging, tracker);
      });
    }
    for (size_t i = 0; FirstPart() && i < inputs_.size(); ++i) {
      jobs.emplace_back(inputs_[i].size, [this, i]() -> absl::Status {
        ASSIGN_OR_RETURN(FileDigest d, HashFile(inputs_[i].path));
        input_digests_[i] = {inputs_[i].name, d.size, d.sha256};
        return absl::OkStatus();
      });
    }
    std::stable_sort(jobs.begin(), jobs.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<std::function<absl::Status()>> tasks;
    for (auto& job : jobs) tasks.push_back(std::move(job.second));
    // A thread with no file left makes the deferred tensor after the one a
    // shard's writer is on (one per shard at a time, so memory holds at
    // most one such tensor per shard): the last shard's quantizing no
    // longer runs on one core while the other idles. The writer takes the
    // bytes made ahead; they are those it would have made.
    auto help = [&]() -> bool {
      for (size_t i = 0; i < plan_.shards.size(); ++i) {
        const size_t at = writing[i].load();
        const std::vector<size_t>& items = plan_.shards[i].items;
        if (at == kNone || at + 1 >= items.size()) continue;
        size_t claimed = ahead[i].load();
        if (claimed != kNone && claimed > at) continue;
        if (!ahead[i].compare_exchange_strong(claimed, at + 1)) continue;
        const PlannedTensor& next = tensors_[items[at + 1]];
        const ir::Tensor& t = *next.source.tensor;
        if (t.data.deferred()) encoder.produce_ahead(t);
        return true;
      }
      return false;
    };
    return RunTasks(support::ThreadsOrCores(options_.threads), tasks,
                    encoder.produce_ahead ? std::function<bool()>(help) : nullptr);
  }

  // `inner` with deferred sparse tensors (sparse_tensors.h) made through
  // ProduceSparse: packed and checked as their bytes come, handed over
  // whole (their parts may be asked for in any order), never made ahead.
  TensorEncoder WithDeferredSparse(const TensorEncoder& inner) const {
    if (sparse_.deferred.empty()) return inner;
    TensorEncoder e = inner;
    const SparseStorage* sparse = &sparse_;
    auto produce = inner.produce;
    e.produce = [sparse, produce](const ir::Tensor& t) -> absl::StatusOr<ir::TensorData> {
      if (sparse->deferred.count(t.name)) return ProduceSparse(*sparse, t.name, produce);
      if (!produce) {
        return absl::InternalError("tensor '" + t.name +
                                   "' has no bytes yet and the writer was given no producer");
      }
      return produce(t);
    };
    if (auto streamed = inner.produce_streamed) {
      e.produce_streamed = [sparse, produce, streamed](const ir::Tensor& t,
                                                       const TensorEncoder::Sink& sink) {
        if (!sparse->deferred.count(t.name)) return streamed(t, sink);
        ASSIGN_OR_RETURN(ir::TensorData bytes, ProduceSparse(*sparse, t.name, produce));
        return sink(bytes.data(), bytes.size());
      };
    }
    if (auto ahead = inner.produce_ahead) {
      e.produce_ahead = [sparse, ahead](const ir::Tensor& t) {
        if (!sparse->deferred.count(t.name)) ahead(t);
      };
    }
    return e;
  }

  absl::StatusOr<std::string> Manifest() const {
    ManifestParts parts;
    parts.model = model_json_;
    parts.recipe = options_.recipe;
    parts.passes = options_.passes;
    parts.producer_version = SLIMPACK_VERSION;
    parts.producer_commit = SourceCommit();
    parts.calibration = options_.calibration;
    parts.inputs = input_digests_;
    parts.shards = shard_digests_;
    parts.carried = carried_digests_;
    parts.tensors.reserve(tensors_.size());
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const ir::Tensor& t = *tensors_[i].source.tensor;
      TensorEntry e;
      e.name = tensors_[i].source.name;
      e.dtype = tensors_[i].dtype;
      e.dims = t.dims;
      e.shard = plan_.placements[i].shard;
      e.offset = plan_.placements[i].offset;
      e.nbytes = tensors_[i].nbytes;
      e.layer = t.layer;
      e.role = t.role;
      e.source = SourceString(t.provenance);
      e.quant = t.quant;
      auto sparse = sparse_.records.find(e.name);
      if (sparse != sparse_.records.end()) e.sparsity = sparse->second;
      parts.tensors.push_back(std::move(e));
    }
    return SerializeManifest(parts);
  }

  ArtifactSummary& summary() { return summary_; }

  // part.json: `manifest` (Manifest()'s text, placeholders included) as
  // JSON, the part and the shards it wrote.
  absl::StatusOr<std::string> PartFile(const std::string& manifest) const {
    nlohmann::json written = nlohmann::json::array();
    for (size_t i = 0; i < plan_.shards.size(); ++i) {
      if (Writes(i)) written.push_back(i);
    }
    nlohmann::json part = {
        {"format", kPartFormat},
        {"part", {{"index", options_.part->index + 1}, {"count", options_.part->count}}},
        {"shards", std::move(written)},
        {"carries_files", FirstPart()},
        {"manifest", nlohmann::json::parse(manifest)},
    };
    return part.dump(1, ' ', false) + "\n";
  }

 private:
  bool Writes(size_t shard) const {
    return !options_.part || owner_[shard] == options_.part->index;
  }
  bool FirstPart() const { return !options_.part || options_.part->index == 0; }

  absl::Status WriteShard(size_t i, const ShardWriteContext& ctx,
                          ProgressTracker& tracker, std::atomic<size_t>* writing) {
    std::vector<ShardTensor> members;
    for (size_t item : plan_.shards[i].items) {
      members.push_back({tensors_[item].source.tensor, tensors_[item].dtype,
                         plan_.placements[item].offset, tensors_[item].nbytes});
    }
    ASSIGN_OR_RETURN(WrittenFile f,
                     WriteShardFile(ctx, static_cast<uint32_t>(i),
                                    plan_.shards[i].file_size, members, writing));
    shard_digests_[i] = {f.file, f.size, f.sha256};
    tracker.FileDone(f.file, "shard-written");
    return absl::OkStatus();
  }

  absl::Status CopyCarried(size_t i, const StagingDir& staging,
                           ProgressTracker& tracker) {
    const CarriedFile& c = carried_[i];
    const std::string dst = staging.path() + "/" + c.name;
    ASSIGN_OR_RETURN(FileDigest d,
                     c.bytes != nullptr
                         ? WriteBytesHashed(*c.bytes, staging.fd(), c.name, dst)
                         : CopyFileHashed(c.path, staging.fd(), c.name, dst));
    carried_digests_[i] = {c.name, d.size, d.sha256};
    tracker.AddBytes(d.size);
    tracker.FileDone(c.name, "carried-written");
    return absl::OkStatus();
  }

  const ir::Model& model_;
  const std::string output_;
  const ArtifactOptions& options_;
  nlohmann::json model_json_;  // ModelJson(model_), built and checked in Plan
  SparseStorage sparse_;  // packed 2:4 tensors tensors_ may point into
  std::vector<PlannedTensor> tensors_;
  ShardPlan plan_;
  std::vector<uint32_t> owner_;  // the part writing each shard
  std::vector<CarriedFile> carried_;
  std::vector<InputFile> inputs_;
  // Filled by the tasks, one slot each.
  std::vector<NamedDigest> shard_digests_;
  std::vector<NamedDigest> carried_digests_;
  std::vector<NamedDigest> input_digests_;
  ArtifactSummary summary_;
};

}  // namespace

absl::StatusOr<ArtifactSummary> WriteArtifact(const ir::Model& model,
                                              const std::string& output,
                                              const ArtifactOptions& options) {
  auto hook = [&options](std::string_view phase) {
    if (options.fault_hook) options.fault_hook(phase, 0);
  };
  ArtifactJob job(model, output, options);
  RETURN_IF_ERROR(job.Plan());
  ASSIGN_OR_RETURN(std::unique_ptr<StagingDir> staging,
                   StagingDir::Create(output));
  hook("staging-created");
  RETURN_IF_ERROR(job.WriteFiles(*staging));
  ASSIGN_OR_RETURN(std::string manifest, job.Manifest());
  if (options.part) {
    ASSIGN_OR_RETURN(manifest, job.PartFile(manifest));
  }
  job.summary().manifest_bytes = manifest.size();
  RETURN_IF_ERROR(WriteManifest(*staging, manifest,
                                options.part ? kPartFileName : shard::kManifestFileName));
  hook("manifest-written");
  // The output may have changed while we worked (another run): re-check
  // so --force is still required to replace an artifact.
  RETURN_IF_ERROR(PreflightOutput(output, options.force).status());
  RETURN_IF_ERROR(staging->Commit(hook));
  hook("committed");
  return job.summary();
}

absl::StatusOr<std::set<std::string>> TensorsOfPart(const ir::Model& model,
                                                  const ArtifactOptions& options) {
  if (!options.part) return absl::InvalidArgumentError("TensorsOfPart: no part given");
  RETURN_IF_ERROR(CheckPart(*options.part));
  SparseStorage sparse;
  std::vector<PlannedTensor> tensors;
  ASSIGN_OR_RETURN(const ShardPlan plan, PlanStoredTensors(model, options, &sparse, &tensors));
  const std::vector<uint32_t> owner = AssignShardsToParts(plan, options.part->count);
  std::set<std::string> names;
  for (size_t i = 0; i < plan.shards.size(); ++i) {
    if (owner[i] != options.part->index) continue;
    for (size_t item : plan.shards[i].items) names.insert(tensors[item].source.name);
  }
  // A shard boundary may fall between a quantized weight and its scale or
  // zero point (a layer larger than the cap is placed tensor by tensor):
  // writing either makes the part quantize the weight.
  for (const ir::Tensor& t : model.graph.initializers()) {
    if (!t.quant.quantized()) continue;
    if (names.count(t.quant.scale) ||
        (!t.quant.zero_point.empty() && names.count(t.quant.zero_point))) {
      names.insert(t.name);
    }
  }
  return names;
}

}  // namespace slimpack::shard_writer

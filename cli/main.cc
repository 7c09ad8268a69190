// slimpack command line: parses flags with CLI11 (the only place CLI11's
// exceptions are allowed) and dispatches to one function per subcommand.
#include <cstdio>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "CLI/CLI.hpp"
#include "cli/calibrate_command.h"
#include "cli/convert_command.h"
#include "cli/eval_command.h"
#include "cli/exit_codes.h"
#include "cli/inspect_command.h"
#include "cli/report_command.h"
#include "cli/run_command.h"
#include "cli/merge_command.h"
#include "cli/verify_command.h"
#include "runtime/gemm/micro_kernel.h"
#include "support/cpu_features.h"


namespace {

constexpr char kVersion[] = "slimpack " SLIMPACK_VERSION;

CLI::App* AddInspectCommand(CLI::App& app, slimpack::cli::InspectOptions& o) {
  CLI::App* inspect_cmd = app.add_subcommand(
      "inspect", "Summarise a model: inputs/outputs, op histogram, parameters by dtype, files");
  inspect_cmd->add_option("MODEL", o.path,
                          "ONNX file, .safetensors file, sharded index or checkpoint directory")
      ->required();
  inspect_cmd->add_flag("--json", o.json, "Print a JSON summary for machines");
  inspect_cmd->footer(
      "Example:\n"
      "  slimpack inspect examples/digits-cnn/model.onnx\n"
      "  slimpack inspect examples/tiny-llama/model.safetensors --json");
  return inspect_cmd;
}

// --sparsity* and --prune*: the model-shrinking flags of convert.
void AddConvertSparsityAndPruneFlags(CLI::App* convert_cmd, slimpack::cli::ConvertOptions& o) {
  convert_cmd->add_option("--sparsity", o.sparsity,
                          "Zero this fraction of each row of the linear weights (embeddings, "
                          "lm_head and norms excluded); 2:4 implies 0.5");
  convert_cmd->add_option("--sparsity-pattern", o.sparsity_pattern,
                          "unstructured (default) or 2:4 (2 kept in every 4 inputs; stored "
                          "packed for float weights)");
  convert_cmd->add_option("--sparsity-criterion", o.sparsity_criterion,
                          "magnitude (default) or wanda (|w| x input norm; needs --calib)");
  convert_cmd->add_option("--prune", o.prune,
                          "Structured pruning: remove this fraction of the MLP channels and KV-head "
                          "groups of every layer of an HF decoder (e.g. 0.2; runs before quantization)");
  convert_cmd->add_option("--prune-criterion", o.prune_criterion,
                          "Pruning importance: l1, l2 (weight magnitude, default l2), activation "
                          "(Wanda: |W| x calibration input norm), loss (calibration output error "
                          "of down_proj/o_proj when the group alone is removed); the last two "
                          "need --calib");
  convert_cmd->add_option("--prune-target", o.prune_target,
                          "What --prune removes: mlp, heads, both (default both)");
  convert_cmd->add_flag("--prune-refit", o.prune_refit,
                        "Least-squares refit of down_proj/o_proj on calibration data after pruning "
                        "(needs --calib)");
  convert_cmd->add_option("--prune-rules", o.prune_rules,
                          "Per-layer pruning rules (JSON list of {match: regex over "
                          "'model.layers.N.', target: mlp|heads|both, ratio | keep}; first match "
                          "wins, other layers follow --prune / --prune-budget-params)");
  convert_cmd->add_option("--prune-budget-params", o.prune_budget_params,
                          "Prune to at most this many parameters (a count, or a fraction in (0, 1) "
                          "of the model's), choosing per-layer counts globally by importance");
}

CLI::App* AddConvertCommand(CLI::App& app, slimpack::cli::ConvertOptions& o) {
  CLI::App* convert_cmd = app.add_subcommand(
      "convert", "Convert a model to a shard artifact (mmap-ready shards + checksummed manifest)");
  convert_cmd->add_option("INPUT", o.input,
                          "ONNX file, .safetensors file, sharded index or checkpoint directory")
      ->required();
  convert_cmd->add_option("-o,--output", o.output,
                          "Artifact directory to create (replaced atomically with --force)")
      ->required();
  convert_cmd->add_option("--part", o.part,
                          "I/N: write only part I of N of the artifact's shards (each part plans "
                          "the whole artifact; `slimpack merge` joins the parts into what one run "
                          "writes; docs/scale-out.md)");
  convert_cmd->add_option("--format", o.format,
                          "Output format: artifact (default: a shard artifact directory), gguf "
                          "(one GGUF file for llama.cpp; --quant takes a llama-quantize type: q4_k_m, "
                          "q8_0, ...) or onnx (an ONNX model for ONNX Runtime; INPUT may be an artifact)");
  convert_cmd->add_option("--onnx-profile", o.onnx_profile,
                          "--format onnx: standard (default: default-domain ops only) or ort (ONNX "
                          "Runtime's contrib ops where it has them: FusedConv, Gelu, "
                          "SimplifiedLayerNormalization)");
  convert_cmd->add_option("--onnx-quant-format", o.onnx_quant_format,
                          "--format onnx with --quant w8a8: qdq (default: QuantizeLinear/"
                          "DequantizeLinear around float Conv/MatMul) or qoperator (QLinearConv, "
                          "MatMulInteger)");
  convert_cmd->add_flag("--onnx-external-data", o.onnx_external_data,
                        "--format onnx: tensors of 1 KiB or more in <model stem>.data beside the "
                        "model (always above 2 GiB), 64-byte aligned");
  convert_cmd->add_flag("--onnx-kv-cache", o.onnx_kv_cache,
                        "--format onnx, HF decoders: with a KV cache in ONNX Runtime GenAI's layout "
                        "(input_ids, attention_mask, position_ids, past_key_values.N.key/value -> "
                        "logits, present.N.key/value), the tokenizer and config files beside the model");
  convert_cmd->add_flag("--onnx-gqa", o.onnx_gqa,
                        "--onnx-kv-cache --onnx-profile ort: each layer's attention as one "
                        "com.microsoft.GroupQueryAttention node, as ORT GenAI's model builder "
                        "writes it (the padding mask as its attention_bias, so left-padded "
                        "batches work as without it)");
  convert_cmd->add_option("--dtype", o.dtype,
                          "Store f32/f16/bf16 weights as this type (default: keep)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  convert_cmd->add_option("--shard-size", o.shard_size,
                          "Cap per shard file in bytes, K/M/G suffixes allowed (default 256M, min 1M)");
  convert_cmd->add_option("--recipe", o.recipe_path,
                          "JSON recipe (keys: dtype, shard_size, passes, quant); flags override it");
  convert_cmd->add_option("--recipe-from", o.recipe_from,
                          "Use the recipe recorded in this artifact's manifest (producer.recipe); "
                          "--calib must name the files it recorded (producer.calibration)");
  convert_cmd->add_option("--threads", o.threads, "Worker threads (default: one per core)")
      ->check(CLI::Range(1, 1024));
  convert_cmd->add_flag("--force", o.force, "Replace an existing artifact at OUT");
  convert_cmd->add_flag("--allow-requantize", o.allow_requantize,
                        "Quantize weights that are already quantized (a GGUF's blocks, GPTQ/AWQ/"
                        "compressed-tensors/FP8 codes): decoded to f32 first, so both roundings "
                        "add up (llama-quantize's flag)");
  convert_cmd->add_flag("--allow-incomplete", o.allow_incomplete,
                        "Convert an HF checkpoint that lacks expected weights (refused by default: "
                        "the artifact cannot run as a decoder)");
  convert_cmd->add_flag("-v,--verbose", o.verbose,
                        "Print per-pass statistics, per-tensor quantization decisions and a line per file");
  convert_cmd->add_option("--passes", o.passes,
                          "Graph passes, comma-separated, in order ('none': no passes; default: the "
                          "pipeline for the input kind)");
  convert_cmd->add_flag("--verify-each", o.verify_each, "Run the IR verifier after every pass");
  convert_cmd->add_flag("--print-ir-after-all", o.print_ir_after_all,
                        "Print the IR to stderr after every pass");
  convert_cmd->add_option("--print-ir-after", o.print_ir_after,
                          "Print the IR to stderr after this pass (repeatable)");
  convert_cmd->add_option("--quant", o.quant,
                          "Weight scheme: int8 (per channel), int8-g32, int8-asym, int4 (group from "
                          "--group, default 128), int4-g32, int4-g64-asym, int3-g64, f16, ...; grouped "
                          "schemes store f16 scales (append -f32scale for f32); or w8a8 (static int8 "
                          "activations)");
  convert_cmd->add_option("--group", o.group,
                          "Group size for a bare --quant int4/int3/int2 (default 128) or int8 "
                          "(default: per channel)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  convert_cmd->add_flag("--asym", o.asym, "Asymmetric quantization (zero points)");
  convert_cmd->add_option("--activation-type", o.activation_type,
                          "--quant w8a8: uint8 (default) or int8 activations (zero points "
                          "stay as calibrated; int8 is what Arm and QNN/NNAPI int8 paths "
                          "prefer)")
      ->check(CLI::IsMember({"uint8", "int8"}));
  convert_cmd->add_option("--algo", o.algo,
                          "Weight algorithm: rtn, rtn-mse, imatrix, gptq, awq (the last three need --calib; "
                          "with --format gguf: rtn, imatrix, gptq on ggml's grids)")
      ->check(CLI::IsMember({"rtn", "rtn-mse", "imatrix", "gptq", "awq"}));
  convert_cmd->add_option("--calib", o.calib,
                          "Calibration data: token windows (.npy int32/int64 [rows, seq]) or input "
                          "files/directories; "
                          "for w8a8 also a calib.json from `slimpack calibrate`");
  convert_cmd->add_option("--progress", o.progress,
                          "Long stages (calibration runs, GPTQ layers, files written): auto (a live "
                          "line on a terminal, none otherwise), json (one JSON line per step on "
                          "stderr, for CI logs), none")
      ->check(CLI::IsMember({"auto", "json", "none"}));
  convert_cmd->add_option("--imatrix", o.imatrix,
                          "Weight rounding errors by an importance matrix file (llama-imatrix's "
                          ".dat, or `slimpack calibrate --imatrix`), as llama-quantize --imatrix "
                          "does: --algo imatrix without calibration runs (artifacts and GGUF)");
  convert_cmd->add_option("--hessians", o.hessians,
                          "GPTQ from precomputed statistics (`slimpack calibrate --hessians`) "
                          "instead of --calib: --algo gptq without calibration runs, each weight "
                          "quantized as its shard is written (every --part reads the same file); "
                          "with --format gguf, GPTQ on ggml's grids for any type from one file");
  convert_cmd->add_option("--awq-inputs", o.awq_inputs,
                          "AWQ from precomputed inputs (`slimpack calibrate --awq-inputs`) instead "
                          "of --calib: --algo awq without calibration runs, the same scales and "
                          "bytes (every --part reads the same file)");
  convert_cmd->add_option("--tensor-type", o.tensor_types,
                          "With a llama-quantize --quant type or --format gguf: PATTERN=TYPE gives "
                          "the matrices whose checkpoint or GGUF name matches the regex PATTERN "
                          "ggml type TYPE (q4_0 ... q6_k, q8_0, f16, bf16, f32) over the preset's "
                          "rules, as llama-quantize --tensor-type does; repeatable, first match wins");
  convert_cmd->add_option("--target-size", o.target_size,
                          "Plan per-tensor schemes to fit this artifact size (3.8GB = 3.8e9 bytes, 3.5GiB)");
  convert_cmd->add_option("--target-bpw", o.target_bpw,
                          "Plan per-tensor schemes for this average bits per quantized weight")
      ->check(CLI::Range(1.0, 32.0));
  convert_cmd->add_option("--report", o.report_dir,
                          "After writing, the accuracy report of the artifact against INPUT into this directory");
  convert_cmd->add_option("--report-data", o.report_data,
                          "Data for --report (files/directories named after the model inputs, or token ids)");
  convert_cmd->add_option("--gate", o.gate,
                          "Gate rules for --report, e.g. 'e2e.kld<=0.03,top1>=0.99' (exit 3 when one fails)");
  convert_cmd->add_option("--calib-samples", o.calib_samples,
                          "Calibration runs to use (default 64)")
      ->check(CLI::PositiveNumber);
  AddConvertSparsityAndPruneFlags(convert_cmd, o);
  convert_cmd->footer(
      "Example:\n"
      "  slimpack convert examples/tiny-llama -o out/tiny-llama --dtype f16\n"
      "  slimpack convert examples/digits-cnn/model.onnx -o out/digits --shard-size 64M --force\n"
      "  slimpack convert examples/tiny-llama -o out/tiny-int4 --quant int4 --group 128 --algo gptq \\\n"
      "      --calib examples/tiny-llama/calib_tokens.npy\n"
      "  slimpack convert examples/digits-cnn/model.onnx -o out/digits-w8a8 --quant w8a8 \\\n"
      "      --calib examples/digits-cnn/calib.npz\n"
      "  slimpack convert out/digits-w8a8 -o out/digits-w8a8.onnx --format onnx \\\n"
      "      --onnx-quant-format qoperator\n"
      "  slimpack convert examples/tiny-llama -o out/tiny-plan --recipe examples/recipes/mobile-int4.json \\\n"
      "      --calib examples/tiny-llama/calib_tokens.npy\n"
      "  slimpack convert examples/tiny-llama -o out/tiny-pruned --prune 0.2 --prune-criterion activation \\\n"
      "      --prune-target mlp --prune-refit --calib examples/tiny-llama/calib_tokens.npy\n"
      "  slimpack convert examples/tiny-llama -o out/tiny-24 --sparsity-pattern 2:4 \\\n"
      "      --sparsity-criterion wanda --calib examples/tiny-llama/calib_tokens.npy\n"
      "Recipe file example: {\"dtype\": \"bf16\", \"shard_size\": \"128M\"}");
  return convert_cmd;
}

CLI::App* AddVerifyCommand(CLI::App& app, slimpack::cli::VerifyOptions& o) {
  CLI::App* verify_cmd = app.add_subcommand(
      "verify", "Check an artifact: manifest, sizes and SHA-256 of every shard and carried file");
  verify_cmd->add_option("ARTIFACT", o.path, "Artifact directory (holds manifest.json)")
      ->required();
  verify_cmd->footer(
      "Example:\n"
      "  slimpack verify out/tiny-llama\n"
      "Exit codes: 0 intact, 1 any problem (the message names the file), 2 usage error.");
  return verify_cmd;
}

CLI::App* AddMergeCommand(CLI::App& app, slimpack::cli::MergeOptions& o) {
  CLI::App* merge_cmd = app.add_subcommand(
      "merge", "Join the parts of a split conversion (convert --part I/N) into one artifact");
  merge_cmd->add_option("PARTS", o.parts, "The part directories, in any order")->required();
  merge_cmd->add_option("-o,--output", o.output,
                        "Artifact directory to create (replaced atomically with --force)")
      ->required();
  merge_cmd->add_flag("--force", o.force, "Replace an existing artifact at the output");
  merge_cmd->footer(
      "Example (three machines, or three jobs of a CI matrix / Kubernetes Indexed Job):\n"
      "  slimpack convert examples/tiny-llama -o parts/p1 --quant int4 --part 1/3\n"
      "  slimpack convert examples/tiny-llama -o parts/p2 --quant int4 --part 2/3\n"
      "  slimpack convert examples/tiny-llama -o parts/p3 --quant int4 --part 3/3\n"
      "  slimpack merge parts/p1 parts/p2 parts/p3 -o out/tiny-int4\n"
      "Exit codes: 0 merged, 1 parts that do not belong together or a damaged part (named), 2 "
      "usage error.");
  return merge_cmd;
}

CLI::App* AddEvalCommand(CLI::App& app, slimpack::cli::EvalOptions& o) {
  CLI::App* eval_cmd = app.add_subcommand(
      "eval", "Perplexity on a token file: non-overlapping windows of W tokens, each scored on its last W-1");
  eval_cmd->add_option("MODEL", o.model,
                       "HF checkpoint (directory, .safetensors or index) or ONNX file (input_ids -> logits)")
      ->required();
  eval_cmd->add_option("--tokens", o.tokens,
                       ".npy of int32/int64 token ids, [n] or [rows, n] (rows are concatenated)")
      ->required();
  eval_cmd->add_option("--window", o.window,
                       "Window length W in tokens (default: max_position_embeddings from config.json)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 30));
  eval_cmd->add_option("--threads", o.threads, "Interpreter threads (default 1)")
      ->check(CLI::Range(1, 1024));
  eval_cmd->add_flag("--json", o.json, "Print a JSON result for machines");
  eval_cmd->footer(
      "Example:\n"
      "  slimpack eval examples/tiny-llama --tokens out/tiny-llama.tokens.npy --window 64 --json");
  return eval_cmd;
}

CLI::App* AddRunCommand(CLI::App& app, slimpack::cli::RunOptions& o) {
  CLI::App* run_cmd = app.add_subcommand(
      "run", "Run a model on named inputs (.npz/.npy) and save every graph output to .npz");
  run_cmd->add_option("MODEL", o.model, "ONNX file or HF checkpoint (input 'input_ids' i64 [batch, seq])")
      ->required();
  run_cmd->add_option("--inputs", o.inputs, ".npz with one entry per graph input, or a .npy named after the input")
      ->required();
  run_cmd->add_option("-o,--output", o.output, ".npz to write (readable by numpy.load)")->required();
  run_cmd->add_flag("--force", o.force,
                    "Replace an existing OUT that slimpack did not write (never an input)");
  run_cmd->add_option("--threads", o.threads, "Interpreter threads (default 1)")->check(CLI::Range(1, 1024));
  run_cmd->add_flag("-v,--verbose", o.verbose,
                    "Say how the graph is computed (an f16 graph runs in f32, casts at its boundary)");
  run_cmd->footer(
      "Example:\n"
      "  slimpack run examples/digits-cnn/model.onnx --inputs in.npz -o out.npz");
  return run_cmd;
}

CLI::App* AddCalibrateCommand(CLI::App& app, slimpack::cli::CalibrateOptions& o) {
  CLI::App* calibrate_cmd = app.add_subcommand(
      "calibrate", "Run a model on calibration data and write activation ranges (calib.json)");
  calibrate_cmd->add_option("MODEL", o.model,
                            "ONNX file, .safetensors file, sharded index or checkpoint directory")
      ->required();
  calibrate_cmd->add_option("--data", o.data,
                            "Dataset directories/files (.npz, .npy, .safetensors, .txt token ids)");
  calibrate_cmd->add_option("-o,--output", o.output, "Calibration table to write (JSON)")->required();
  calibrate_cmd->add_flag("--force", o.force,
                          "Replace an existing file that is not a calibration table (never an input)");
  calibrate_cmd->add_option("--method", o.method, "Range method (default minmax)")
      ->check(CLI::IsMember({"minmax", "moving_minmax", "percentile", "entropy", "mse"}));
  calibrate_cmd->add_flag("--per-channel", o.per_channel, "Also record per-channel ranges");
  calibrate_cmd->add_option("--channel-axis", o.channel_axis,
                            "Per-channel axis (default: 1 for rank 4/5, else the last)")
      ->check(CLI::NonNegativeNumber)
      ->needs("--per-channel");
  calibrate_cmd->add_option("--percentile", o.percentile, "For --method percentile (default 99.99)")
      ->check(CLI::Range(50.0, 100.0));
  calibrate_cmd->add_option("--bins", o.num_bins, "Histogram bins, a multiple of 4 (default 4096)");
  calibrate_cmd->add_option("--entropy-levels", o.entropy_levels,
                            "Quantized |x| levels for --method entropy (128 int8, 256 uint8)");
  calibrate_cmd->add_option("--max-batch", o.max_batch,
                            "Rows per run when a data file holds a batch (default 32)")
      ->check(CLI::PositiveNumber);
  calibrate_cmd->add_option("--input-map", o.input_map,
                            "MODEL_INPUT=ARRAY: read an input from a differently named array");
  calibrate_cmd->add_option("--calib-random", o.random_samples,
                            "Use N random samples instead of --data (smoke runs only: not calibration)")
      ->check(CLI::PositiveNumber);
  calibrate_cmd->add_option("--seed", o.seed, "Seed for --calib-random (default 0)");
  calibrate_cmd->add_flag("--imatrix", o.imatrix,
                          "Write an importance matrix (llama.cpp's imatrix .dat: mean x^2 of every "
                          "linear layer's input columns) for `convert --imatrix` instead of a range "
                          "table");
  calibrate_cmd->add_flag("--hessians", o.hessians,
                          "Write GPTQ's statistics (every linear layer's input X^T X / rows in the "
                          "float model, as safetensors) for `convert --algo gptq --hessians`: each "
                          "part of a split conversion reads them instead of running the model");
  calibrate_cmd->add_flag("--awq-inputs", o.awq_inputs,
                          "Write what AWQ's scale search reads (each layer group's input: mean |x| "
                          "per column and up to 512 rows, as safetensors) for `convert --algo awq "
                          "--awq-inputs`: the same scales as --calib, in every part of a split "
                          "conversion, without running the model");
  calibrate_cmd->add_option("--calib-samples", o.calib_samples,
                            "With --imatrix/--hessians/--awq-inputs: calibration runs to average over (a run is a batch of "
                            "up to --max-batch windows; default 64, as convert --calib-samples)")
      ->check(CLI::PositiveNumber);
  calibrate_cmd->add_flag("--xtx", o.xtx,
                          "Also store X^T X per MatMul/Gemm input (GPTQ Hessian; K*K doubles each)");
  calibrate_cmd->add_option("--threads", o.threads,
                            "Interpreter threads (tables are identical for any value)")
      ->check(CLI::Range(1, 1024));
  calibrate_cmd->add_option("--check-data", o.check_data,
                            "After calibrating, report tensors whose range on this data exceeds the table");
  calibrate_cmd->add_option("--progress", o.progress,
                            "Calibration runs (and --hessians' layers): auto (a live line on a "
                            "terminal, none otherwise), json (one JSON line per step on stderr, for "
                            "CI logs), none")
      ->check(CLI::IsMember({"auto", "json", "none"}));
  calibrate_cmd->add_flag("-v,--verbose", o.verbose, "Print a line per run");
  calibrate_cmd->footer(
      "Example:\n"
      "  slimpack calibrate examples/digits-cnn/model.onnx --data examples/digits-cnn/eval.safetensors \\\n"
      "      --input-map input=inputs -o calib.json --method entropy --per-channel\n"
      "  slimpack calibrate model.onnx --calib-random 8 --seed 1 -o smoke.json\n"
      "Dataset rules: a directory contributes its .npz/.npy/.safetensors/.txt files sorted by name;\n"
      "an .npz/.safetensors holds one array per model input (extra arrays ignored), a .npy feeds a\n"
      "single-input model; an array with the input's rank is a batch along dim 0 (cut into runs of\n"
      "--max-batch), one of rank-1 is a single sample; dtype and static dims must match the input\n"
      "(an i64 input also takes int32, widened exactly). Token ids (input_ids) must be >= 0 and below\n"
      "config.json's vocab_size; a bad one is reported with its file, [row, column] and value.");
  return calibrate_cmd;
}

CLI::App* AddReportCommand(CLI::App& app, slimpack::cli::ReportCommandOptions& o) {
  CLI::App* report_cmd = app.add_subcommand(
      "report", "Accuracy-diff report: reference vs candidate per layer, per weight and end to end");
  report_cmd->add_option("--reference", o.reference, "Reference model (ONNX file or HF checkpoint)")
      ->required();
  report_cmd->add_option("--candidate", o.candidate,
                         "Candidate (compressed) model: ONNX file, HF checkpoint or slimpack artifact")
      ->required();
  report_cmd->add_option("--data", o.data,
                         "Dataset files/directories (.npz, .npy, .safetensors, .txt; as for calibrate)")
      ->required();
  report_cmd->add_option("-o,--output", o.output, "Report directory (o.json/.md/.html)")
      ->required();
  report_cmd->add_flag("--force", o.force,
                       "Replace report.json/.md/.html in a directory that holds no slimpack report");
  report_cmd->add_option("--gate", o.gate,
                         "CI rules, e.g. 'e2e.kld<=0.03,layer.sqnr>=20,top1>=0.99' (exit 3 on failure)");
  report_cmd->add_option("--input-map", o.input_map, "MODEL_INPUT=ARRAY: read an input from another array");
  report_cmd->add_option("--labels", o.labels,
                         "Class-id array in the data files (default: 'labels' when present)");
  report_cmd->add_option("--calib", o.calib, "Calibration table (calib.json) for range overflow checks");
  report_cmd->add_option("--max-batch", o.max_batch, "Rows per run (default 32)");
  report_cmd->add_option("--max-runs", o.max_runs, "Compare at most N runs (default: all)");
  report_cmd->add_option("--sensitivity-runs", o.sensitivity_runs,
                         "Runs used for the one-layer-at-a-time ranking (default 2, 0 disables)");
  report_cmd->add_option("--fallback-layers", o.fallback_layers,
                         "At most N layers in the proposed fallback set (default 3)");
  report_cmd->add_option("--threads", o.threads, "Interpreter threads (reports are identical for any value)")
      ->check(CLI::Range(1, 1024));
  report_cmd->add_option("--progress", o.progress,
                         "Compared runs and sensitivity layers: auto (a live line on a terminal), "
                         "json (one JSON line per step on stderr), none")
      ->check(CLI::IsMember({"auto", "json", "none"}));
  report_cmd->add_flag("--json", o.json, "Print o.json instead of the Markdown summary");
  report_cmd->footer(
      "Example:\n"
      "  slimpack report --reference examples/digits-cnn/model.onnx --candidate digits-w8.onnx \\\n"
      "      --data examples/digits-cnn/eval.safetensors --input-map input=inputs -o report/ \\\n"
      "      --gate 'layer.quant_sqnr>=20,top1>=0.99'\n"
      "Exit codes: 0 ok, 1 bad input, 2 usage or malformed gate rule, 3 a gate rule failed.\n"
      "Schema: docs/report-schema.md");
  return report_cmd;
}

}  // namespace

int main(int argc, char** argv) {
  // SLIMPACK_CPU_MAX is read here, before any thread starts: a value it
  // refuses ends the run now, with its message, not from a worker mid-run.
  slimpack::support::CpuCapInForce();
#if defined(__GLIBC__)
  // A conversion allocates and frees blocks of a few MiB per weight block on
  // every writer thread. glibc's defaults give a thread arena's freed top
  // back to the kernel past a few MiB, so each block faulted fresh zeroed
  // pages in again (perf: every page fault of an int8 peer convert came
  // from such buffers; ~10 K faults at several µs each on our VMs). Keep up
  // to 256 MiB of freed memory for reuse; blocks of 32 MiB and more are
  // still mapped on their own and returned when freed.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
  CLI::App app{"slimpack: offline model compression and conversion for on-device inference"};
  // The GEMM micro-kernel this CPU runs: every kernel gives the same bits
  // (runtime/gemm.h), but a bug report or the cross-CPU test wants to know.
  app.set_version_flag("--version", std::string(kVersion) + " (gemm micro-kernel: " +
                                        slimpack::runtime::gemm::BestMicroKernel().name + ")");
  app.require_subcommand(1);
  app.footer(
      "Examples:\n"
      "  slimpack inspect examples/digits-cnn/model.onnx\n"
      "  slimpack inspect examples/tiny-llama --json\n"
      "  slimpack convert examples/tiny-llama -o out/tiny-llama --dtype f16\n"
      "  slimpack verify out/tiny-llama\n"
      "Exit codes: 0 ok, 1 failed on input, 2 usage error.");

  slimpack::cli::InspectOptions inspect;
  CLI::App* inspect_cmd = AddInspectCommand(app, inspect);
  slimpack::cli::ConvertOptions convert;
  CLI::App* convert_cmd = AddConvertCommand(app, convert);
  slimpack::cli::VerifyOptions verify;
  CLI::App* verify_cmd = AddVerifyCommand(app, verify);
  slimpack::cli::MergeOptions merge;
  CLI::App* merge_cmd = AddMergeCommand(app, merge);
  slimpack::cli::EvalOptions eval;
  CLI::App* eval_cmd = AddEvalCommand(app, eval);
  slimpack::cli::RunOptions run;
  CLI::App* run_cmd = AddRunCommand(app, run);
  slimpack::cli::CalibrateOptions calibrate;
  CLI::App* calibrate_cmd = AddCalibrateCommand(app, calibrate);
  slimpack::cli::ReportCommandOptions report;
  CLI::App* report_cmd = AddReportCommand(app, report);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return slimpack::cli::kExitUsage;
  }
  if (inspect_cmd->parsed()) return slimpack::cli::RunInspect(inspect);
  if (convert_cmd->parsed()) return slimpack::cli::RunConvert(convert);
  if (verify_cmd->parsed()) return slimpack::cli::RunVerify(verify);
  if (merge_cmd->parsed()) return slimpack::cli::RunMerge(merge);
  if (eval_cmd->parsed()) return slimpack::cli::RunEval(eval);
  if (run_cmd->parsed()) return slimpack::cli::RunRun(run);
  if (calibrate_cmd->parsed()) return slimpack::cli::RunCalibrate(calibrate);
  if (report_cmd->parsed()) return slimpack::cli::RunReport(report);
  return slimpack::cli::kExitUsage;
}

// slimpack command line: parses flags with CLI11 (the only place CLI11's
// exceptions are allowed) and dispatches to one function per subcommand.
#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/convert_command.h"
#include "cli/exit_codes.h"
#include "cli/inspect_command.h"
#include "cli/verify_command.h"

namespace {

constexpr char kVersion[] = "slimpack 0.1.0";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"slimpack: offline model compression and conversion for on-device inference"};
  app.set_version_flag("--version", kVersion);
  app.require_subcommand(1);
  app.footer(
      "Examples:\n"
      "  slimpack inspect examples/digits-cnn/model.onnx\n"
      "  slimpack inspect examples/tiny-llama --json\n"
      "  slimpack convert examples/tiny-llama -o out/tiny-llama --dtype f16\n"
      "  slimpack verify out/tiny-llama\n"
      "Exit codes: 0 ok, 1 failed on input, 2 usage error.");

  slimpack::cli::InspectOptions inspect;
  CLI::App* inspect_cmd = app.add_subcommand(
      "inspect", "Summarise a model: inputs/outputs, op histogram, parameters by dtype, files");
  inspect_cmd->add_option("MODEL", inspect.path,
                          "ONNX file, .safetensors file, sharded index or checkpoint directory")
      ->required();
  inspect_cmd->add_flag("--json", inspect.json, "Print a JSON summary for machines");
  inspect_cmd->footer(
      "Example:\n"
      "  slimpack inspect examples/digits-cnn/model.onnx\n"
      "  slimpack inspect examples/tiny-llama/model.safetensors --json");

  slimpack::cli::ConvertOptions convert;
  CLI::App* convert_cmd = app.add_subcommand(
      "convert", "Convert a model to a shard artifact (mmap-ready shards + checksummed manifest)");
  convert_cmd->add_option("INPUT", convert.input,
                          "ONNX file, .safetensors file, sharded index or checkpoint directory")
      ->required();
  convert_cmd->add_option("-o,--output", convert.output,
                          "Artifact directory to create (replaced atomically with --force)")
      ->required();
  convert_cmd->add_option("--dtype", convert.dtype,
                          "Store f32/f16/bf16 weights as this type (default: keep)")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  convert_cmd->add_option("--shard-size", convert.shard_size,
                          "Cap per shard file in bytes, K/M/G suffixes allowed (default 256M, min 1M)");
  convert_cmd->add_option("--recipe", convert.recipe_path,
                          "JSON recipe (keys: dtype, shard_size, passes); flags override it");
  convert_cmd->add_option("--threads", convert.threads, "Worker threads (default: one per core)")
      ->check(CLI::Range(1, 1024));
  convert_cmd->add_flag("--force", convert.force, "Replace an existing artifact at OUT");
  convert_cmd->add_flag("-v,--verbose", convert.verbose, "Print a line per file written");
  convert_cmd->footer(
      "Example:\n"
      "  slimpack convert examples/tiny-llama -o out/tiny-llama --dtype f16\n"
      "  slimpack convert examples/digits-cnn/model.onnx -o out/digits --shard-size 64M --force\n"
      "Recipe file example: {\"dtype\": \"bf16\", \"shard_size\": \"128M\"}");

  slimpack::cli::VerifyOptions verify;
  CLI::App* verify_cmd = app.add_subcommand(
      "verify", "Check an artifact: manifest, sizes and SHA-256 of every shard and carried file");
  verify_cmd->add_option("ARTIFACT", verify.path, "Artifact directory (holds manifest.json)")
      ->required();
  verify_cmd->footer(
      "Example:\n"
      "  slimpack verify out/tiny-llama\n"
      "Exit codes: 0 intact, 1 any problem (the message names the file), 2 usage error.");

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
  return slimpack::cli::kExitUsage;
}

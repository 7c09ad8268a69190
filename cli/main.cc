// slimpack command line: parses flags with CLI11 (the only place CLI11's
// exceptions are allowed) and dispatches to one function per subcommand.
#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/exit_codes.h"
#include "cli/inspect_command.h"

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
  return slimpack::cli::kExitUsage;
}

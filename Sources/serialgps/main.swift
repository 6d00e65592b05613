// The `serialgps` command: argument parsing and output only. Each subcommand lives in a file
// of its own and registers itself in `commands` below.

import Glibc
import SerialGPS

/// A subcommand: its name, a one-line summary for `serialgps help`, and its entry point,
/// which returns the process exit code.
struct Command: Sendable {
  let name: String
  let usage: String
  let summary: String
  let run: @Sendable ([String]) async -> Int32
}

let commands: [Command] = [
  decodeCommand,
  listCommand,
  serveCommand,
  sendCommand,
  watchCommand,
  locateCommand,
  followCommand,
  replayCommand,
  recordCommand,
  gpxCommand,
  demoCommand,
]

func printUsage(to stream: Output = .standard) {
  var text = "usage: serialgps <command> [options]\n\ncommands:\n"
  for command in commands {
    text += "  " + command.usage + "\n      " + command.summary + "\n"
  }
  text += "\nRun `serialgps <command> --help` for a command's options;\n"
  text += "`serialgps --version` prints the version.\n"
  stream.write(text)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let name = arguments.first else {
  printUsage(to: .error)
  exitProcess(2)
}
if name == "help" || name == "--help" || name == "-h" {
  printUsage()
  exitProcess(0)
}
if name == "--version" || name == "version" {
  Output.standard.write("serialgps \(Version.serialgps)\n")
  exitProcess(0)
}
guard let command = commands.first(where: { $0.name == name }) else {
  Output.error.write("serialgps: unknown command '\(name)'\n\n")
  printUsage(to: .error)
  exitProcess(2)
}
// Commands run on the driver's own thread: a program that never starts libdispatch's thread
// pool never wakes while idle (docs/receiver.md).
let commandArguments = Array(arguments.dropFirst())
exitProcess(DriverExecutor.runBlocking { await command.run(commandArguments) })

import GPSDServer
import Glibc
import NTRIP
import POSIX
import SerialGPS

/// `serve`'s NTRIP options: the caster whose corrections the first receiver served gets while
/// it is powered (docs/ntrip.md).
struct ServeNTRIPOptions: Equatable {
  /// `--ntrip URL`.
  var url: String?
  /// `--ntrip-credentials FILE`: `user:password`.
  var credentialsFile: String?
  /// `--ntrip-gga S`: seconds between positions sent; 0: none.
  var positionInterval: Duration? = .seconds(10)
  /// `--ntrip-timeout S`: a caster silent this long is reconnected.
  var silenceTimeout: Duration = .seconds(30)

  var isEnabled: Bool { url != nil }

  /// Where credentials come from when no file is given.
  static let environmentVariable = "SERIALGPS_NTRIP_CREDENTIALS"

  static let help = """
      --ntrip URL         RTK corrections for the first receiver served, from an NTRIP caster:
                          ntrip://[user@]host[:port]/MOUNTPOINT (port 2101 by default;
                          ntrip1:// for a caster that speaks only NTRIP 1). Connected only while
                          the receiver is powered; whole RTCM 3 frames whose CRC matches are
                          written to it between serve's own commands (docs/ntrip.md)
      --ntrip-credentials FILE
                          the caster's user:password from FILE (first line); else from the
                          environment variable SERIALGPS_NTRIP_CREDENTIALS. A password in the
                          URL shows in the process list: prefer these
      --ntrip-gga S       seconds between the rover positions (GGA) sent to the caster, which
                          virtual reference stations need (default 10; 0: none)
      --ntrip-timeout S   a caster that sends nothing for S seconds is reconnected (default 30)
    """

  mutating func take(_ argument: String, from reader: inout ArgumentReader) throws(UsageMessage)
    -> Bool
  {
    switch argument {
    case "--ntrip":
      url = try reader.value("--ntrip needs a caster such as ntrip://caster.example:2101/MOUNT")
    case "--ntrip-credentials":
      credentialsFile = try reader.value("--ntrip-credentials needs a file holding user:password")
    case "--ntrip-gga":
      let interval = try reader.seconds(
        in: 0...3600, allowingZero: true,
        "--ntrip-gga needs a number of seconds from 0 (none) to 3600, such as 10")
      positionInterval = interval == .zero ? nil : interval
    case "--ntrip-timeout":
      silenceTimeout = try reader.seconds(
        in: 1...3600, allowingZero: false,
        "--ntrip-timeout needs a number of seconds from 1 to 3600, such as 30")
    default:
      return false
    }
    return true
  }

  /// A mistake only visible with all options read, or `nil`.
  var mistake: String? {
    if url == nil
      && (credentialsFile != nil || positionInterval != .seconds(10)
        || silenceTimeout != .seconds(30))
    {
      return "the --ntrip-… options need --ntrip URL"
    }
    if let url {
      do {
        _ = try NTRIPCaster(url: url)
      } catch {
        return "--ntrip: \(error)"
      }
    }
    return nil
  }

  /// The session's settings, with the credentials from the file, the environment
  /// (`environmentCredentials`, the variable's value) or the URL (in that order), or why they cannot be read. `warning`: what to say about them.
  func configuration(environmentCredentials: String?) -> Result<
    (NTRIPSession.Configuration, warning: String?), ServeUsageError
  > {
    guard let url, var caster = try? NTRIPCaster(url: url) else {
      return .failure(ServeUsageError(message: "--ntrip needs a caster"))
    }
    var warning: String?
    if let credentialsFile {
      let bytes: [UInt8]
      do {
        bytes = try FileDescriptor.contents(of: credentialsFile)
      } catch {
        return .failure(
          ServeUsageError(message: "--ntrip-credentials \(credentialsFile): \(error)"))
      }
      guard let credentials = NTRIPCredentials(text: String(decoding: bytes, as: UTF8.self))
      else {
        return .failure(
          ServeUsageError(
            message: "--ntrip-credentials \(credentialsFile): write user:password on its first line"
          ))
      }
      caster.credentials = credentials
    } else if let text = environmentCredentials {
      guard let credentials = NTRIPCredentials(text: text) else {
        return .failure(
          ServeUsageError(message: "\(Self.environmentVariable) must hold user:password"))
      }
      caster.credentials = credentials
    } else if let given = caster.credentials, !given.password.isEmpty {
      warning =
        "the NTRIP password given in --ntrip shows in the process list; put user:password in "
        + "a file for --ntrip-credentials FILE or in \(Self.environmentVariable)"
    }
    var configuration = NTRIPSession.Configuration(caster: caster)
    configuration.userAgent = "NTRIP SerialGPS/\(Version.serialgps)"
    configuration.positionInterval = positionInterval
    configuration.silenceTimeout = silenceTimeout
    return .success((configuration, warning))
  }
}

/// The NTRIP client inside `serve`: follows the first receiver the server serves (the one the
/// raw port serves too), and the next one when that one goes.
final class ServeNTRIP: Sendable {
  private let configuration: NTRIPSession.Configuration
  private struct Current: Sendable {
    var path: String
    var client: NTRIPClient
  }
  private let current = Locked<Current?>(nil)
  /// Counters of clients that ended (a receiver unplugged), added to the current one's.
  private let ended = Locked<[NTRIPStatistics]>([])

  init(configuration: NTRIPSession.Configuration) {
    self.configuration = configuration
  }

  /// For `GPSDServer.Configuration.receiverChanges` (the server's thread: nothing blocks).
  func change(_ change: ServedReceiverChange) {
    switch change {
    case .added(let served):
      let configuration = self.configuration
      var options = NTRIPClient.Options()
      options.log = { message in Output.error.line("serialgps serve: \(served.path): \(message)") }
      // The server's thread calls this one change at a time: the check and the store
      // cannot race, and the client's thread starts outside the lock.
      guard current.withLock({ $0 == nil }) else { return }
      let client: NTRIPClient
      do {
        client = try NTRIPClient(
          receiver: served.receiver, configuration: configuration, options: options)
      } catch {
        Output.error.line(
          "serialgps serve: \(served.path): cannot start the NTRIP client (\(error)); "
            + "serving without corrections")
        return
      }
      current.withLock { $0 = Current(path: served.path, client: client) }
      Output.error.line(
        "serialgps serve: \(served.path) gets corrections from \(configuration.caster) while powered"
      )
    case .removed(let served):
      let client = current.withLock { current -> NTRIPClient? in
        guard let now = current, now.path == served.path else { return nil }
        current = nil
        return now.client
      }
      guard let client else { return }
      DriverExecutor.task { [ended] in
        await client.stop()
        ended.withLock { $0.append(client.statistics) }
      }
    }
  }

  /// Stops the client (before the receivers are put to standby) and returns the summary line.
  func shutdown() async -> String {
    let client = current.withLock { current -> NTRIPClient? in
      defer { current = nil }
      return current?.client
    }
    if let client {
      await client.stop()
      ended.withLock { $0.append(client.statistics) }
    }
    return Self.summary(ended.withLock { $0 })
  }

  /// One line of what the corrections did.
  static func summary(_ all: [NTRIPStatistics]) -> String {
    var total = NTRIPStatistics()
    for statistics in all {
      total.bytesReceived += statistics.bytesReceived
      total.framesReceived += statistics.framesReceived
      total.framesForwarded += statistics.framesForwarded
      total.framesDropped += statistics.framesDropped
      total.framesRefused += statistics.framesRefused
      total.positionsSent += statistics.positionsSent
      total.connections += statistics.connections
      total.failures += statistics.failures
      total.connectedTime += statistics.connectedTime
      total.longestConnection = max(total.longestConnection, statistics.longestConnection)
    }
    return "NTRIP: \(total.connections) connections (\(total.failures) failed) for "
      + "\(total.connectedTime.components.seconds) s, the longest "
      + "\(total.longestConnection.components.seconds) s; \(total.bytesReceived) bytes, "
      + "\(total.framesReceived) frames received, \(total.framesForwarded) forwarded, "
      + "\(total.framesDropped) dropped while the receiver stalled, "
      + "\(total.framesRefused) refused by CRC; \(total.positionsSent) positions sent"
  }
}

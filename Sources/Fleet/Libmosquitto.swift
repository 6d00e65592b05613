import CMosquitto

/// libmosquitto, loaded when the first ``FleetBridge`` or ``RemoteReceiver`` is made, so that a
/// program that never uses MQTT does not load it (nor, through it, libssl and libcrypto) and
/// does not need it installed. Every call into the library goes through ``functions``.
enum Libmosquitto {
  /// The library's name as Debian's `libmosquitto1` installs it.
  static let soname = "libmosquitto.so.1"

  /// The one attempt of the process to load it (a library installed while the process runs is
  /// found by the next one).
  private static let loaded: Result<cmosquitto_library, FleetError> = load(soname: soname)

  /// Loads the library the first time; then says again how that went.
  ///
  /// - Throws: a ``FleetError/Kind/configuration`` error that says what to install.
  static func require() throws(FleetError) { _ = try loaded.get() }

  /// The library's functions. Only after ``require()`` succeeded (every client and the network
  /// thread come from a bridge or a remote receiver, whose initialisers call it).
  static var functions: cmosquitto_library {
    switch loaded {
    case .success(let functions): return functions
    case .failure(let error): preconditionFailure("libmosquitto used before require(): \(error)")
    }
  }

  /// Opens `soname` and resolves the functions the bridge calls; the error says what to do.
  static func load(soname: String) -> Result<cmosquitto_library, FleetError> {
    let library = UnsafeMutablePointer<cmosquitto_library>.allocate(capacity: 1)
    defer { library.deallocate() }
    var reason = [CChar](repeating: 0, count: 512)
    guard cmosquitto_load(soname, library, &reason, reason.count) else {
      let detail = String(
        decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
      return .failure(
        FleetError(
          "MQTT needs libmosquitto 1.6 or later, which cannot be loaded (\(detail)): install it "
            + "with `apt install libmosquitto1`", kind: .configuration))
    }
    return .success(library.pointee)
  }
}

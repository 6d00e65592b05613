// swift-tools-version: 6.1
// SerialGPS: a serial GPS driver for embedded Linux that powers the receiver only while
// someone listens. Modules follow the data path (see docs/ARCHITECTURE.md); no module
// imports one later in the path.

import PackageDescription

let package = Package(
  name: "SerialGPS",
  products: [
    .library(name: "NMEA", targets: ["NMEA"]),
    .library(name: "SerialPort", targets: ["SerialPort"]),
    .library(name: "Chipsets", targets: ["Chipsets"]),
    .library(name: "Discovery", targets: ["Discovery"]),
    .library(name: "SerialGPS", targets: ["SerialGPS"]),
    .library(name: "Replay", targets: ["Replay"]),
    .library(name: "Simulator", targets: ["Simulator"]),
    .library(name: "GPSDProtocol", targets: ["GPSDProtocol"]),
    .library(name: "GPX", targets: ["GPX"]),
    .library(name: "TimeService", targets: ["TimeService"]),
    .library(name: "Fleet", targets: ["Fleet"]),
    .library(name: "NTRIP", targets: ["NTRIP"]),
    .executable(name: "serialgps", targets: ["serialgps"]),
  ],
  targets: [
    // Bytes → sentences → fixes. No Foundation, no I/O, no clocks.
    .target(name: "NMEA", linkerSettings: [.linkedLibrary("m")]),

    // The system layer every module shares (package access; only `Errno` is public API):
    // errno, descriptors, EINTR, poll, eventfd, threads, locks, the signal pipe, and the one
    // conversion of durations for the kernel. Its C interop is in CPOSIX.
    .target(name: "CPOSIX"),
    .target(name: "POSIX", dependencies: ["CPOSIX"]),

    // termios serial port. Its termios and ioctl shims are in CSerialShims.
    .target(name: "CSerialShims"),
    .target(name: "SerialPort", dependencies: ["CSerialShims", "POSIX"]),

    // Per-chipset command bytes, acknowledgements and passive identification.
    .target(name: "Chipsets", dependencies: ["NMEA"]),

    // libudev: enumeration, classification and hotplug.
    .systemLibrary(
      name: "CUdev",
      pkgConfig: "libudev",
      providers: [.apt(["libudev-dev"])]
    ),
    .target(name: "Discovery", dependencies: ["CUdev", "Chipsets", "POSIX"]),

    // GPS time for chrony and ntpd: trusted samples, chrony SOCK, NTP SHM, PPS sources and
    // pulse labelling (docs/time.md). Its C side declares the binary interfaces from the
    // headers that define them.
    .target(name: "CTimeShims"),
    .target(
      name: "TimeService",
      dependencies: ["NMEA", "Chipsets", "SerialPort", "CSerialShims", "CTimeShims", "POSIX"]),

    // The gated receiver: subscriptions, power policy, the reader (which feeds the time
    // service when it has one).
    .target(
      name: "SerialGPS",
      dependencies: ["NMEA", "SerialPort", "Chipsets", "Discovery", "TimeService", "POSIX"]
    ),

    // Recordings: reading, writing and pacing their bursts.
    .target(name: "Replay", dependencies: ["NMEA", "Chipsets", "SerialPort", "POSIX"]),
    // Simulated receivers: the receiver models, their physics and energy meter, and
    // recordings played as in-process receivers. It implements SerialGPS's connector, so it
    // comes after SerialGPS; the CLI, tests and benchmarks use it, a library app need not.
    .target(
      name: "Simulator",
      dependencies: ["Replay", "NMEA", "Chipsets", "SerialPort", "SerialGPS", "POSIX"]),

    // gpsd JSON reports (TPV, SKY, DEVICE …) and client command parsing.
    .target(name: "GPSDProtocol", dependencies: ["NMEA"]),
    // GPX 1.1 tracks of fixes, whole or streamed (no Foundation); decimals as the reports.
    .target(name: "GPX", dependencies: ["NMEA", "GPSDProtocol"]),
    // The gpsd-compatible server whose watchers are subscribers.
    .target(
      name: "GPSDServer",
      dependencies: [
        "GPSDProtocol", "SerialGPS", "Discovery", "NMEA", "Chipsets", "TimeService", "POSIX",
      ]
    ),

    // libmosquitto (MQTT 5 client), loaded with dlopen when a bridge or a remote receiver is
    // first made: nothing links it, so a program (serialgps included) that never uses MQTT
    // neither loads it nor needs it installed. Building needs its header (libmosquitto-dev).
    .target(name: "CMosquitto", linkerSettings: [.linkedLibrary("dl")]),
    // Fleets: receivers published to an MQTT broker with power gating carried across the
    // network (FleetBridge), and receivers followed from it (RemoteReceiver).
    .target(
      name: "Fleet",
      dependencies: ["CMosquitto", "SerialGPS", "GPSDProtocol", "NMEA", "Discovery", "POSIX"]
    ),

    // RTK corrections from an NTRIP caster, fetched only while the receiver is powered and
    // written to it as whole RTCM 3 frames whose CRC matched (docs/ntrip.md).
    .target(name: "NTRIP", dependencies: ["NMEA", "SerialGPS", "POSIX"]),

    .executableTarget(
      name: "serialgps",
      dependencies: [
        "NMEA", "SerialPort", "Chipsets", "Discovery", "SerialGPS", "Replay", "Simulator",
        "GPSDProtocol", "GPX", "GPSDServer", "Fleet", "NTRIP", "TimeService", "POSIX",
      ]
    ),

    .testTarget(name: "POSIXTests", dependencies: ["POSIX"]),
    .testTarget(name: "NMEATests", dependencies: ["NMEA"]),
    .testTarget(name: "SerialPortTests", dependencies: ["SerialPort", "CSerialShims", "POSIX"]),
    .testTarget(name: "ChipsetsTests", dependencies: ["Chipsets", "NMEA"]),
    .testTarget(
      name: "DiscoveryTests", dependencies: ["Discovery", "Chipsets"],
      exclude: ["Fixtures", "Support"]),
    // Drives Discovery, and the gated receiver following a receiver, through umockdev's
    // testbed for DiscoveryTests (run under umockdev-wrapper); loads libumockdev at run time,
    // so building needs nothing extra. Mock receivers answer with Simulator's ReceiverModel.
    .executableTarget(
      name: "discovery-testbed",
      dependencies: ["Discovery", "SerialGPS", "Replay", "Simulator", "Chipsets", "NMEA", "POSIX"],
      path: "Tests/DiscoveryTestbed"),
    .testTarget(
      name: "SerialGPSTests",
      dependencies: [
        "SerialGPS", "Replay", "Simulator", "NMEA", "Chipsets", "SerialPort", "Discovery",
        "TimeService",
        "POSIX",
      ]
    ),
    .testTarget(
      name: "ReplayTests",
      dependencies: ["Replay", "Simulator", "NMEA", "Chipsets", "SerialPort", "SerialGPS", "POSIX"]),
    .testTarget(name: "GPSDProtocolTests", dependencies: ["GPSDProtocol", "NMEA"]),
    // The NTRIP client's pure parts as exact outputs and action lists, and the client against
    // a test caster and RTKLIB's str2str on loopback ports.
    .testTarget(
      name: "NTRIPTests",
      dependencies: ["NTRIP", "NMEA", "SerialGPS", "Replay", "Chipsets", "POSIX"]),
    // The time service's rules as tables, its outputs against chronyd and ntpshmmon, the
    // kernel PPS interface against <linux/pps.h> as gcc compiles it.
    .testTarget(
      name: "TimeServiceTests",
      dependencies: ["TimeService", "CTimeShims", "NMEA", "Chipsets", "SerialPort", "POSIX"]),
    // The GPX writer against the GPX 1.1 schema (xmllint) and the fixtures.
    .testTarget(name: "GPXTests", dependencies: ["GPX", "NMEA", "Replay"], exclude: ["gpx.xsd"]),
    // The CLI's pieces in-process, and the built executable against simulated receivers.
    .testTarget(
      name: "serialgpsTests",
      dependencies: [
        "serialgps", "GPSDProtocol", "GPX", "NMEA", "Replay", "Simulator", "SerialPort", "Chipsets",
        "GPSDServer", "SerialGPS", "NTRIP",
      ]),
    // `serialgps watch`: its formatting, and the built executable against a pty.
    .testTarget(
      name: "WatchTests",
      dependencies: ["serialgps", "SerialGPS", "SerialPort", "NMEA", "GPSDProtocol"]),
    // The fleet bridge and remote receivers against a real mosquitto on a loopback port; the
    // gates' decisions as exact action lists.
    .testTarget(
      name: "FleetTests",
      dependencies: [
        "Fleet", "CMosquitto", "SerialGPS", "Replay", "Simulator", "GPSDProtocol", "NMEA",
        "Chipsets",
        "GPSDServer",
        "POSIX", "serialgps",
      ]
    ),
    .testTarget(
      name: "GPSDServerTests",
      dependencies: [
        "GPSDServer", "GPSDProtocol", "SerialGPS", "Replay", "Simulator", "NMEA", "SerialPort",
        "Discovery",
        "Chipsets", "POSIX", "TimeService",
      ]
    ),
  ],
  swiftLanguageModes: [.v6]
)

// The benchmarks (Benchmarks/, BENCHMARKS.md) exist only when SERIALGPS_BENCHMARKS is set in
// the environment (`make bench` and the scripts that build them set it): `swift build` of this
// package, and of an app that depends on it, builds none of them. They stay in this package
// rather than one of their own because they use its modules' package-level API (POSIX's
// clocks, descriptors and threads).
if Context.environment["SERIALGPS_BENCHMARKS"] != nil {
  package.products += [
    .executable(name: "nmea-bench", targets: ["nmea-bench"]),
    .executable(name: "serial-bench", targets: ["serial-bench"]),
    .executable(name: "receiver-bench", targets: ["receiver-bench"]),
    .executable(name: "fleet-bench", targets: ["fleet-bench"]),
  ]
  package.targets += [
    // The malloc-counting shim, linked into nmea-bench only.
    .target(name: "CMallocCounter", path: "Benchmarks/CMallocCounter"),
    .executableTarget(
      name: "nmea-bench", dependencies: ["NMEA", "GPSDProtocol", "CMallocCounter", "POSIX"],
      path: "Benchmarks/nmea-bench"),
    // What an idle SerialPort reader costs and how fast a blocked reader wakes.
    .executableTarget(
      name: "serial-bench", dependencies: ["SerialPort", "POSIX"], path: "Benchmarks/serial-bench"),
    // The gated receiver's fix latency, power-on time, wake-ups and memory (no Foundation,
    // whose threads and pages would be counted).
    .executableTarget(
      name: "receiver-bench",
      dependencies: ["SerialGPS", "SerialPort", "Chipsets", "NMEA", "GPSDProtocol", "POSIX"],
      path: "Benchmarks/receiver-bench"),
    // Many in-process replays published through an MQTT broker; driven by
    // scripts/bench-fleet.py beside serve on ptys and gpsd with gpspipe | mosquitto_pub.
    .executableTarget(
      name: "fleet-bench",
      dependencies: ["Fleet", "SerialGPS", "Replay", "Simulator", "NMEA", "Chipsets", "POSIX"],
      path: "Benchmarks/fleet-bench"),
  ]
}

// swift-tools-version:5.4
// The libFuzzer targets: the NMEA framer, parser and fix builder (FuzzDecoder), and the
// position file's parser with the aiding encoders (FuzzPositionFile). A package of its own,
// with tools version 5.4, because SwiftPM 5.5 and later rename an executable's `main` for
// testing, which clashes with the `main` that `-sanitize=fuzzer` links in. Build and run it
// with scripts/fuzz.sh; it builds into Fuzz/.build, apart from the main package's .build.

import PackageDescription

let package = Package(
  name: "SerialGPSFuzz",
  dependencies: [
    .package(name: "SerialGPS", path: "..")
  ],
  targets: [
    .executableTarget(
      name: "FuzzDecoder",
      dependencies: [.product(name: "NMEA", package: "SerialGPS")]
    ),
    // A kept position's file through its parser and the aiding encoders.
    .executableTarget(
      name: "FuzzPositionFile",
      dependencies: [
        .product(name: "NMEA", package: "SerialGPS"),
        .product(name: "Chipsets", package: "SerialGPS"),
      ]
    ),
  ]
)

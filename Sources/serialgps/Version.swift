/// The `serialgps` release, as `serialgps --version`, recordings (`# Recorder:`) and GPX files
/// (`creator`) name it. This line is the version's one home: `make deb` reads it
/// (scripts/version.sh) for the Debian package's name, control file and changelog.
enum Version {
  static let serialgps = "0.1.0"
}

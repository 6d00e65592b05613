/// The `serialgps` release, as recordings (`# Recorder:`) and GPX files (`creator`) name it.
enum Version {
  static let serialgps = "0.1.0"
}

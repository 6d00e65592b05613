// Substring search for the package's modules without `_StringProcessing`, whose
// `contains(_: some StringProtocol)` and `firstRange(of:)` are the only substring searches
// Swift has without Foundation. One call to those brings `_StringProcessing` and
// `_RegexParser` into the executable (1.4 MB, BENCHMARKS.md), and `make deb` builds
// `serialgps` without them (docs/packaging.md), so code in `serialgps` calls these.

extension StringProtocol {
  /// The range of the first occurrence of `other`, compared character by character; `nil`
  /// when there is none. An empty `other` is found at the start.
  package func firstRange(ofSubstring other: some StringProtocol) -> Range<Index>? {
    var start = startIndex
    while true {
      var position = start
      var wanted = other.startIndex
      while wanted != other.endIndex, position != endIndex, self[position] == other[wanted] {
        formIndex(after: &position)
        other.formIndex(after: &wanted)
      }
      if wanted == other.endIndex { return start..<position }
      if start == endIndex { return nil }
      formIndex(after: &start)
    }
  }

  /// Whether `other` occurs in this text, compared character by character.
  package func contains(substring other: some StringProtocol) -> Bool {
    firstRange(ofSubstring: other) != nil
  }
}

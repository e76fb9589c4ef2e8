// StopMatcher: finds stop strings in streamed text without emitting them.
//
// The session loop feeds each decoded piece of text as it is generated. Feed()
// returns the text that is safe to emit now: everything except a held-back
// tail that could still be the start of a stop string. When a stop string
// completes, Feed() returns the text before it and reports stopped; the stop
// string and anything after it are dropped, and every later Feed() returns
// nothing. At the end of generation (an eos token, max_tokens) Flush() returns
// the held-back tail, which then turned out not to be a stop string.
//
// Matching is on bytes. Among stop strings that complete in the same Feed(),
// the one starting earliest wins (ties: the one listed first). For valid UTF-8
// stop strings and text, the matcher only ever cuts at the start of a stop
// string, so it never splits a character itself; a piece that ends inside a
// character is passed through (or held) as given.
//
// Held-back text is shorter than the longest stop string, so memory is
// bounded by that plus one piece. Empty stop strings are ignored (Validate()
// rejects them). With no stop strings everything is emitted at once.
//
// Thread-safety: none; one per session, used by one thread at a time.
// Failure: none.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace troupe {

class StopMatcher {
 public:
  struct Released {
    std::string text;      // safe to emit now; may be empty
    bool stopped = false;  // a stop string completed (text is what preceded it)
  };

  explicit StopMatcher(std::vector<std::string> stops);

  // Adds `piece` to the stream. After a stop this returns {"", true}.
  Released Feed(std::string_view piece);

  // Ends the stream: returns the held-back tail (empty after a stop).
  std::string Flush();

  bool stopped() const { return stopped_; }
  // The stop string that completed; empty until stopped() is true.
  const std::string& matched() const { return matched_; }

 private:
  // Length of the longest suffix of held_ that is a proper prefix of a stop.
  size_t PartialMatchLength() const;

  std::vector<std::string> stops_;  // non-empty
  std::string held_;                // text fed but not yet released
  std::string matched_;
  bool stopped_ = false;
};

}  // namespace troupe

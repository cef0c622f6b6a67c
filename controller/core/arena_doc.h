#pragma once

#include <memory>

#include "dcufleet/v1/deploy.pb.h"
#include "google/protobuf/arena.h"

namespace dcu::controller {

// A deployment document the reconcile pass steps, on an arena of its own.
//
// Why: a pass copies every document it steps (the published ones are shared
// and immutable), and a stepped document replaces the one it was copied
// from. On the heap that is ~60 allocations per copy — the argv, the memory
// explanation, the plans — and as many frees when the old document goes: in
// a 20,000-deployment wave the copies and destructions were ~9% of the
// controller's CPU (BENCHMARKS.md, stop 43). On an arena the copy is a few
// block allocations and the document goes with its arena, and the copy the
// pass stepped is the one it publishes (no second copy).
class ArenaDoc {
 public:
  static ArenaDoc CopyOf(const dcufleet::v1::Deployment& from) {
    google::protobuf::ArenaOptions options;
    // One block that holds the copy and what a step adds to it, sized from
    // the attempts (most of a document): measured on a loadgen document,
    // ~1.3 KB without attempts and ~2.2 KB per attempt, plus ~1 KB of the
    // arena's own (string clean-up entries). A block much larger is memory
    // held for the document's life (+130 MiB at 20,000 documents with 8 KB
    // blocks); a smaller one doubles into a second block.
    options.start_block_size = 2560 + 2688 * static_cast<size_t>(from.status().attempts_size());
    options.max_block_size = 64 * 1024;
    ArenaDoc doc;
    doc.arena_ = std::make_shared<google::protobuf::Arena>(options);
    doc.doc_ = google::protobuf::Arena::CreateMessage<dcufleet::v1::Deployment>(doc.arena_.get());
    doc.doc_->CopyFrom(from);
    return doc;
  }

  dcufleet::v1::Deployment& operator*() const { return *doc_; }
  dcufleet::v1::Deployment* operator->() const { return doc_; }
  dcufleet::v1::Deployment* get() const { return doc_; }

  // The document as readers share it: it keeps its arena alive.
  std::shared_ptr<const dcufleet::v1::Deployment> Publish() && {
    return std::shared_ptr<const dcufleet::v1::Deployment>(std::move(arena_), doc_);
  }

 private:
  ArenaDoc() = default;
  std::shared_ptr<google::protobuf::Arena> arena_;
  dcufleet::v1::Deployment* doc_ = nullptr;
};

}  // namespace dcu::controller

// SPDX-License-Identifier: Apache-2.0
// An intrusive doubly-linked recency list, for LRU eviction.
#ifndef TICKWHEEL_INTERNAL_LRU_LIST_H_
#define TICKWHEEL_INTERNAL_LRU_LIST_H_

namespace tickwheel::internal {

// The links an element of an LruList carries.
template <typename Node>
struct LruLinks {
  Node* newer = nullptr;
  Node* older = nullptr;
};

// LruList orders elements it does not own from most to least recently used.
// `LinksOf` is a function object: LruLinks<Node>& LinksOf(Node&). Elements
// must not move while listed (nodes of std::unordered_map do not).
//
// Thread safety: none. Cost: every operation O(1), no allocation.
template <typename Node, typename LinksOf>
class LruList {
 public:
  // REQUIRES: `node` is not listed.
  void PushFront(Node* node) {
    LruLinks<Node>& links = LinksOf{}(*node);
    links.newer = nullptr;
    links.older = newest_;
    if (newest_ != nullptr) LinksOf{}(*newest_).newer = node;
    newest_ = node;
    if (oldest_ == nullptr) oldest_ = node;
  }

  // REQUIRES: `node` is listed.
  void Remove(Node* node) {
    LruLinks<Node>& links = LinksOf{}(*node);
    if (links.newer != nullptr) {
      LinksOf{}(*links.newer).older = links.older;
    } else {
      newest_ = links.older;
    }
    if (links.older != nullptr) {
      LinksOf{}(*links.older).newer = links.newer;
    } else {
      oldest_ = links.newer;
    }
    links = {};
  }

  // REQUIRES: `node` is listed.
  void MoveToFront(Node* node) {
    if (node == newest_) return;
    Remove(node);
    PushFront(node);
  }

  // The least recently used element, or nullptr if empty.
  Node* oldest() const { return oldest_; }

 private:
  Node* newest_ = nullptr;
  Node* oldest_ = nullptr;
};

}  // namespace tickwheel::internal

#endif  // TICKWHEEL_INTERNAL_LRU_LIST_H_

#include "feedplane/runtime/messages.h"

namespace feedplane::runtime {

const char* kind_name(kind k) {
  switch (k) {
    case kind::meta:
      return "meta";
    case kind::sources:
      return "sources";
    case kind::crawl:
      return "crawl";
    case kind::accounts:
      return "accounts";
    case kind::subscriptions:
      return "subscriptions";
    case kind::articles:
      return "articles";
    case kind::test:
      return "test";
    case kind::count:
      break;
  }
  return "unknown";
}

}  // namespace feedplane::runtime

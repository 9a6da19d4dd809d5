// The transports built into the babelqueue program. This is the one place to
// extend when a new transport library exists: link it in CMakeLists.txt (which
// defines BABELQUEUE_WITH_<NAME> when its target is there) and call its
// registration function below. memory:// is always available.
#include "commands.hpp"

#if defined(BABELQUEUE_WITH_SQLITE) && BABELQUEUE_WITH_SQLITE
#include <babelqueue/sqlite_transport.hpp>
#endif

namespace babelqueue::cli {

void register_transports() {
#if defined(BABELQUEUE_WITH_SQLITE) && BABELQUEUE_WITH_SQLITE
  babelqueue::sqlite::register_transport();
#endif
  // Next transports, the same way:
  // #if defined(BABELQUEUE_WITH_REDIS) && BABELQUEUE_WITH_REDIS
  //   babelqueue::redis::register_transport();
  // #endif
}

}  // namespace babelqueue::cli

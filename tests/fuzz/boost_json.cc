// SPDX-License-Identifier: Apache-2.0
// Boost.JSON, compiled here from its headers (instead of linking the
// distribution's uninstrumented library) so that the fuzzers see its code.
#include <boost/json/src.hpp>

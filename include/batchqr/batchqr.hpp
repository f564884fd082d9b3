// batchqr: umbrella header.
#pragma once

#include "batchqr/geqrf.hpp"
#include "batchqr/status.hpp"
#include "batchqr/types.hpp"
#include "batchqr/version.hpp"

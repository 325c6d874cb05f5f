#pragma once
// Everything a user needs: #include <xylem/xylem.hpp>
#include "xylem/backend.hpp"
#include "xylem/blas.hpp"
#include "xylem/creation.hpp"
#include "xylem/dtype.hpp"
#include "xylem/error.hpp"
#include "xylem/future.hpp"
#include "xylem/hardware.hpp"
#include "xylem/math.hpp"
#include "xylem/nn.hpp"
#include "xylem/layout.hpp"
#include "xylem/tensor.hpp"

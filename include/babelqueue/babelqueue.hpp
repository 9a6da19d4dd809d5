// Everything of babelqueue::core in one include.
#pragma once

#include <babelqueue/clock.hpp>
#include <babelqueue/dead_letter.hpp>
#include <babelqueue/envelope.hpp>
#include <babelqueue/error.hpp>
#include <babelqueue/json.hpp>
#include <babelqueue/rejection.hpp>
#include <babelqueue/result.hpp>
#include <babelqueue/typed_message.hpp>
#include <babelqueue/uuid.hpp>
#include <babelqueue/value.hpp>
#include <babelqueue/version.hpp>

// A process-wide object made on its first use and never destroyed.
//
// Worker threads (callers recording into rings and counters, the drainer, the
// metrics server) may still use these objects while static destructors run at
// exit, so they are leaked on purpose rather than made function-local statics.
// A class derives from Leaked<itself>, befriends it, and gets instance(); it
// may declare a static create() that does its one-time set-up too (its fork
// handlers), else a plain `new T()` makes it.
#pragma once

namespace trt_trace {

template <class T>
class Leaked {
 public:
  // Inline: hot-path callers pay a guard check and a load, no call.
  static T& instance() {
    static T* const object = T::create();
    return *object;
  }

 protected:
  static T* create() { return new T(); }
};

}  // namespace trt_trace

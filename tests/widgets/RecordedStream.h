// RecordedStream.h — test helpers: replaying a committed event stream (JSON lines) and an
// EngineClient that records the commands it is sent.
#pragma once

#include <QFile>
#include <QString>
#include <stdexcept>
#include <vector>

#include "TestPaths.h"
#include "engine/Protocol.h"
#include "widgets/EngineTypes.h"

namespace lorascope::testing {

// tests/widgets/fixtures/<name>; the streams there are synthetic (make_synthetic_streams.cpp).
inline QString fixturePath(const QString& name) {
  return QString::fromStdString(lstest::sourcePath("tests/widgets/fixtures") + "/") + name;
}

inline std::vector<engine::TimedEvent> readStream(const QString& name) {
  QFile file(fixturePath(name));
  if (!file.open(QIODevice::ReadOnly)) {
    throw std::runtime_error("cannot open " + fixturePath(name).toStdString());
  }
  std::vector<engine::TimedEvent> events;
  while (!file.atEnd()) {
    const QByteArray line = file.readLine().trimmed();
    if (!line.isEmpty()) {
      events.push_back(engine::decodeEvent(std::string_view(line.constData(), line.size())));
    }
  }
  return events;
}

template <typename Event>
std::vector<Event> eventsOfType(const std::vector<engine::TimedEvent>& stream) {
  std::vector<Event> out;
  for (const engine::TimedEvent& e : stream) {
    if (const auto* typed = std::get_if<Event>(&e.event)) {
      out.push_back(*typed);
    }
  }
  return out;
}

// Sends go to `sent`; tests play the engine by emitting event().
class RecordingEngineClient : public widgets::EngineClient {
 public:
  using widgets::EngineClient::EngineClient;
  void send(const engine::Command& command) override { sent.push_back(command); }
  bool isConnected() const override { return connected; }
  void setConnected(bool on) {
    connected = on;
    emit connectedChanged(on);
  }
  void play(const std::vector<engine::TimedEvent>& events) {
    for (const engine::TimedEvent& e : events) {
      emit eventReceived(e);
    }
  }

  std::vector<engine::Command> sent;
  bool connected = false;
};

}  // namespace lorascope::testing

/* The little of the Arduino core an edgestream example sketch uses, to compile sketches without a core. */
#ifndef ARDUINO_STUB_H
#define ARDUINO_STUB_H
#include <stdint.h>

class SerialStub {
public:
    void begin(unsigned long) {}
    void print(const char *) {}
    void println(const char *) {}
};
extern SerialStub Serial;
void delay(unsigned long ms);
#endif

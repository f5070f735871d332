/* Which variants of the frozen-model inference csrc/es_infer.c compiles. This default enables all of them (the
 * host runtime that the property tests drive); a generated bundle replaces this file with its own, naming the
 * one input type, table layout and leaf kind its model uses, so nothing else is compiled into the firmware. */
#ifndef ES_INFER_CONFIG_H
#define ES_INFER_CONFIG_H

#define ES_INFER_ALL 1

#endif

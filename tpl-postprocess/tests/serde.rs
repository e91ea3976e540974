//! With the `serde` feature, the result types serialise with the names the command line
//! uses (`map-integer`, `closed-loop`) and warnings as tagged objects.
#![cfg(feature = "serde")]

use serde_json::json;
use tpl_core::TransitionMatrix;
use tpl_core::test_util::forward_only;
use tpl_postprocess::{
    Calibration, Estimator, Filter, FilterConfig, PriorPolicy, PriorUpdate, Source, Warning, filter, map_step,
};

#[test]
fn estimates_serialise_with_command_line_names() {
    let m = TransitionMatrix::identity(3);
    let config = FilterConfig {
        correlation: &forward_only(&m),
        estimator: Estimator::MapInteger,
        ..FilterConfig::new(6)
    };
    let out = filter(&[vec![4.0, 2.0, 0.0], vec![4.0, 2.0, 0.0]], &[1.0, 1.0], config).unwrap();
    let value = serde_json::to_value(&out).unwrap();
    assert_eq!(
        value,
        json!({
            "estimator": "map-integer",
            "estimates": [[4.0, 2.0, 0.0], [4.0, 2.0, 0.0]],
            "warnings": [{"kind": "zero-prior-cells", "cells": [2]}],
            // Laplace of scale Δ/ε = 2 has variance 8; two releases of a still cell halve it.
            "std_errors": [[8f64.sqrt(), 8f64.sqrt(), 8f64.sqrt()], [2.0, 2.0, 2.0]],
        })
    );
}

#[test]
fn names_and_steps_serialise() {
    assert_eq!(serde_json::to_value(Warning::UniformFallback).unwrap(), json!({"kind": "uniform-fallback"}));
    assert_eq!(serde_json::to_value(PriorUpdate::OpenLoop).unwrap(), json!("open-loop"));
    assert_eq!(
        serde_json::to_value(PriorPolicy::Explicit(vec![0.5, 0.5])).unwrap(),
        json!({"explicit": [0.5, 0.5]})
    );
    for e in Estimator::ALL {
        assert_eq!(serde_json::to_value(e).unwrap(), json!(e.name()));
    }
    let s = map_step(&[6.0, 4.0], &[0.5, 0.5], 10.0, 1.0).unwrap();
    assert_eq!(serde_json::to_value(&s).unwrap(), json!({"x": [6.0, 4.0], "lambda": null}));
}

#[test]
fn a_calibrated_step_says_which_prior_it_used() {
    let m = TransitionMatrix::identity(2);
    let config =
        FilterConfig { correlation: &forward_only(&m), prior: PriorPolicy::Uniform, ..FilterConfig::new(4) };
    let mut f = Filter::new(2, config).unwrap();
    let step = f.step(&[3.0, 1.0], 1.0).unwrap();
    let value = serde_json::to_value(&step).unwrap();
    assert_eq!(value["calibration"], json!({"move_weight": 1.0, "dispersion": 1.0}));
    assert_eq!(serde_json::to_value(Calibration::DBSEC).unwrap(), value["calibration"]);
    // What the guard handed out, by name.
    assert_eq!(value["source"], json!("model"));
    for (source, name) in [(Source::Model, "model"), (Source::Release, "release"), (Source::Held, "held")] {
        assert_eq!((serde_json::to_value(source).unwrap(), source.name()), (json!(name), name));
    }
}
